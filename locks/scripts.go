package locks

import "github.com/redis/go-redis/v9"

// The Lua scripts the recipes share. Each runs atomically on the server.
var (
	// compareAndDelete deletes the key only if it still holds our token.
	compareAndDelete = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

	// compareAndExpire renews the key's TTL only if it still holds our token.
	compareAndExpire = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

	// setAndFence takes the lock and draws the next fencing token in one
	// step, so a fence always belongs to exactly one grant.
	setAndFence = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0`)
)
