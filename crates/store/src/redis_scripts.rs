//! The Lua scripts of [`crate::RedisThrottleStore`]. Each runs alone on its node (atomic)
//! and touches only keys of one Cluster slot (the store groups an attempt's budgets by
//! slot and sends one script per slot). Time is the Redis server's (`TIME`), in
//! microseconds, so instances with skewed clocks agree.

/// `acquire` and `peek` (ARGV[1] = "1" charges, "0" only looks). ARGV[2i], ARGV[2i+1]:
/// key i's interval and tolerance in microseconds. Returns {0, worst_us, wait_us...} when
/// a budget is exhausted (each key's own wait, 0 for those with room), else
/// {1, ahead_us...}: how far each TAT is (or would be) ahead of now.
pub(crate) const ACQUIRE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local charge = ARGV[1] == '1'
local worst = 0
local waits = {}
local tats = {}
for i = 1, #KEYS do
  local interval = tonumber(ARGV[2 * i])
  local tolerance = tonumber(ARGV[2 * i + 1])
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0') or 0
  if tat < now then tat = now end
  local ahead = tat - now
  waits[i] = 0
  if ahead > tolerance then
    waits[i] = ahead - tolerance
    if ahead - tolerance > worst then worst = ahead - tolerance end
  end
  tats[i] = tat + interval
end
if worst > 0 then
  local out = {0, worst}
  for i = 1, #KEYS do out[i + 2] = waits[i] end
  return out
end
local out = {1}
for i = 1, #KEYS do
  local ahead = tats[i] - now
  if charge then
    redis.call('SET', KEYS[i], string.format('%d', tats[i]), 'PX', math.ceil(ahead / 1000))
  end
  out[i + 1] = ahead
end
return out
";

/// Give one interval (ARGV[2i], microseconds) back to each key, never below now. A key
/// that was refusing (its TAT more than its tolerance ARGV[2i+1] ahead) may reopen: its
/// name is published on channel ARGV[1] so every instance forgets its local refusal.
pub(crate) const REFUND: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
for i = 1, #KEYS do
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0') or 0
  if tat > 0 then
    local new = tat - tonumber(ARGV[2 * i])
    if new <= now then
      redis.call('DEL', KEYS[i])
    else
      redis.call('SET', KEYS[i], string.format('%d', new), 'PX', math.ceil((new - now) / 1000))
    end
    if tat - now > tonumber(ARGV[2 * i + 1]) then
      redis.call('PUBLISH', ARGV[1], KEYS[i])
    end
  end
end
return 1
";

/// An operator's unblock: forget each budget and tell every instance (channel ARGV[1]).
pub(crate) const UNBLOCK: &str = r"
local n = 0
for i = 1, #KEYS do
  n = n + redis.call('DEL', KEYS[i])
  redis.call('PUBLISH', ARGV[1], KEYS[i])
end
return n
";

/// Trust mark for ARGV[1] milliseconds, extending and never shortening.
pub(crate) const TRUST: &str = r"
local ttl = tonumber(ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('SET', KEYS[1], '1', 'PX', ttl)
end
return 1
";
