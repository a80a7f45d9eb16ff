//! The replicas' shared rate gate: Butler's [`RateGate`] over Redis, so platform limits
//! (Telegram's 1/s per chat and 30/s per bot, Slack's per-method holds, Discord's buckets),
//! webhook sources, refused requests and pairing lockouts count once for all replicas.
//!
//! Each key is one Redis hash under `<prefix>:gate:<key>` (fields: `t` GCRA's theoretical
//! arrival time, `h` a hold, `n`/`w` a window count and its end, all in microseconds of Redis's
//! own clock, so replicas with skewed clocks still agree). One Lua script does every operation
//! atomically and sets the key to expire when it is back to fresh, so nothing piles up.
//!
//! It must never block a caller on Redis: every call has a short deadline, and when Redis is
//! away (an error or no answer) the gate answers from this replica's own [`LocalGate`] for a
//! while, logging the outage once and the recovery once. It must never log the Redis URL.

use super::RedisLink;
use butler_channel::limit::{LocalGate, Rate, RateGate};
use redis::aio::ConnectionManager;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long one gate call may wait for Redis before the local gate answers instead.
const DEADLINE: Duration = Duration::from_millis(250);
/// After a failure, Redis is not asked again for this long (the local gate answers).
const AWAY_FOR: Duration = Duration::from_secs(2);

/// Every operation, on the hash `KEYS[1]`; `ARGV[1]` is the operation, the rest its numbers
/// (microseconds, counts). Answers `{ok, value}`.
const SCRIPT: &str = r#"
local key, op = KEYS[1], ARGV[1]
local a, b, c = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function num(x) return string.format('%.0f', x) end
local function keep()
  local f = redis.call('HMGET', key, 't', 'h', 'w')
  local last = math.max(tonumber(f[1]) or 0, tonumber(f[2]) or 0, tonumber(f[3]) or 0)
  if last <= now then
    redis.call('DEL', key)
  else
    redis.call('PEXPIRE', key, math.ceil((last - now) / 1000) + 1000)
  end
end
if op == 'reserve' then
  local f = redis.call('HMGET', key, 't', 'h')
  local start = math.max(now, tonumber(f[2]) or 0)
  local tat = math.max(tonumber(f[1]) or 0, start)
  local slot = math.max(start, tat - (b - 1) * a)
  local wait = slot - now
  if wait > c then return {0, wait} end
  redis.call('HSET', key, 't', num(tat + a))
  keep()
  return {1, wait}
elseif op == 'hold' then
  local h = tonumber(redis.call('HGET', key, 'h')) or 0
  redis.call('HSET', key, 'h', num(math.max(h, now + a)))
  keep()
  return {1, 0}
elseif op == 'held' then
  local h = tonumber(redis.call('HGET', key, 'h')) or 0
  return {1, math.max(h - now, 0)}
elseif op == 'count' then
  local f = redis.call('HMGET', key, 'n', 'w')
  local n, w = tonumber(f[1]) or 0, tonumber(f[2]) or 0
  if w <= now then
    n = 0
    w = now + a
  end
  n = n + 1
  redis.call('HSET', key, 'n', n, 'w', num(w))
  keep()
  return {1, n}
elseif op == 'clear' then
  redis.call('DEL', key)
  return {1, 0}
end
return redis.error_reply('unknown gate operation')
"#;

/// The rate gate the replicas share.
pub struct RedisGate {
    conn: ConnectionManager,
    /// `<prefix>:gate:`
    prefix: String,
    script: redis::Script,
    /// What answers while Redis is away.
    local: LocalGate,
    /// Redis is not asked before this (after a failure).
    away_until: Mutex<Option<Instant>>,
    /// Whether the outage was logged (and the recovery is still to be).
    away: AtomicBool,
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

fn duration(us: i64) -> Duration {
    Duration::from_micros(u64::try_from(us).unwrap_or(0))
}

impl RedisGate {
    /// A gate on `conn` whose keys start with `prefix` (the cluster's `<prefix>:gate:`).
    pub fn new(conn: ConnectionManager, prefix: impl Into<String>) -> Self {
        Self {
            conn,
            prefix: prefix.into(),
            script: redis::Script::new(SCRIPT),
            local: LocalGate::default(),
            away_until: Mutex::new(None),
            away: AtomicBool::new(false),
        }
    }

    /// The gate of the replicas joined through `link`: its connection, keys under
    /// `<prefix>:gate:`.
    pub fn for_link(link: &RedisLink) -> Self {
        Self::new(link.conn(), link.key("gate:"))
    }

    /// Whether Redis is being skipped now (it failed a moment ago).
    pub fn is_away(&self) -> bool {
        let until = *self.away_until.lock().unwrap_or_else(|p| p.into_inner());
        until.is_some_and(|t| Instant::now() < t)
    }

    /// Runs `op` on `key` in Redis: `None` when Redis is away (the caller asks the local gate).
    async fn run(&self, op: &str, key: &str, args: [i64; 3]) -> Option<(i64, i64)> {
        if self.is_away() {
            return None;
        }
        let mut conn = self.conn.clone();
        let mut call = self.script.key(format!("{}{key}", self.prefix));
        call.arg(op).arg(args[0]).arg(args[1]).arg(args[2]);
        let why = match tokio::time::timeout(DEADLINE, call.invoke_async::<(i64, i64)>(&mut conn)).await {
            Ok(Ok(answer)) => {
                if self.away.swap(false, Ordering::Relaxed) {
                    tracing::info!("redis answers again; rate limits are shared by the replicas again");
                }
                return Some(answer);
            }
            Ok(Err(e)) => format!("{:?}", e.kind()),
            Err(_) => format!("no answer within {} ms", DEADLINE.as_millis()),
        };
        *self.away_until.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + AWAY_FOR);
        if !self.away.swap(true, Ordering::Relaxed) {
            tracing::warn!(error = %why, "redis is unreachable; rate limits are this replica's own until it is back");
        }
        None
    }

    /// The local gate that answers while Redis is away.
    pub fn fallback(&self) -> &LocalGate {
        &self.local
    }
}

#[async_trait::async_trait]
impl RateGate for RedisGate {
    async fn reserve(&self, key: &str, rate: Rate, max_wait: Duration) -> Result<Duration, Duration> {
        let args = [micros(rate.every).max(0), i64::from(rate.burst.max(1)), micros(max_wait)];
        match self.run("reserve", key, args).await {
            Some((1, wait)) => Ok(duration(wait)),
            Some((_, wait)) => Err(duration(wait)),
            None => self.local.reserve(key, rate, max_wait).await,
        }
    }

    async fn hold(&self, key: &str, wait: Duration) {
        if self.run("hold", key, [micros(wait), 0, 0]).await.is_none() {
            self.local.hold(key, wait).await;
        }
    }

    async fn held(&self, key: &str) -> Option<Duration> {
        match self.run("held", key, [0, 0, 0]).await {
            Some((_, left)) => Some(duration(left)).filter(|d| !d.is_zero()),
            None => self.local.held(key).await,
        }
    }

    async fn count(&self, key: &str, window: Duration) -> u64 {
        match self.run("count", key, [micros(window), 0, 0]).await {
            Some((_, n)) => u64::try_from(n).unwrap_or(0),
            None => self.local.count(key, window).await,
        }
    }

    async fn clear(&self, key: &str) {
        if self.run("clear", key, [0, 0, 0]).await.is_none() {
            self.local.clear(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gate on the test Redis with a prefix of its own (tests run in parallel).
    async fn gate(url: &str) -> (RedisGate, String) {
        let client = redis::Client::open(url).unwrap();
        // (a proxy's address in the outage test)
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(300)))
            .set_response_timeout(Some(Duration::from_millis(300)))
            .set_number_of_retries(0);
        let conn = client.get_connection_manager_with_config(config).await.unwrap();
        let prefix = format!("test-{}:gate:", uuid::Uuid::new_v4().simple());
        (RedisGate::new(conn, prefix.clone()), prefix)
    }

    async fn ttl_ms(g: &RedisGate, key: &str) -> i64 {
        let mut c = g.conn.clone();
        redis::cmd("PTTL").arg(format!("{}{key}", g.prefix)).query_async(&mut c).await.unwrap()
    }

    #[tokio::test]
    async fn operations_answer_like_the_local_gate_and_keys_expire() {
        let (g, _) = gate("redis://127.0.0.1:6379").await;
        let spaced = Rate::spaced(Duration::from_millis(1000));
        let near = |d: Duration, ms: u64| d.as_millis().abs_diff(u128::from(ms)) <= 50;
        assert_eq!(g.reserve("k", spaced, Duration::ZERO).await, Ok(Duration::ZERO));
        let w = g.reserve("k", spaced, Duration::from_secs(5)).await.unwrap();
        assert!(near(w, 1000), "{w:?}");
        let e = g.reserve("k", spaced, Duration::from_millis(100)).await.unwrap_err();
        assert!(near(e, 2000), "{e:?}");
        let ttl = ttl_ms(&g, "k").await;
        assert!((2000..=3100).contains(&ttl), "the key lives until it is fresh again (+1 s): {ttl} ms");
        // A burst: three at once, the fourth waits a third of the period.
        let burst = Rate { every: Duration::from_millis(300), burst: 3 };
        for _ in 0..3 {
            assert_eq!(g.reserve("b", burst, Duration::ZERO).await, Ok(Duration::ZERO));
        }
        assert!(near(g.reserve("b", burst, Duration::ZERO).await.unwrap_err(), 300));
        // Holds: the longer one stays; reserve waits for it.
        g.hold("h", Duration::from_millis(800)).await;
        g.hold("h", Duration::from_millis(100)).await;
        assert!(near(g.held("h").await.unwrap(), 800));
        assert!(near(g.reserve("h", spaced, Duration::ZERO).await.unwrap_err(), 800));
        assert_eq!(g.held("nothing").await, None);
        assert_eq!(ttl_ms(&g, "nothing").await, -2, "asking leaves no key behind");
        // Counts in a window, and clearing.
        let mut got = Vec::new();
        for _ in 0..4 {
            got.push(g.count("c", Duration::from_secs(60)).await);
        }
        assert_eq!(got, vec![1, 2, 3, 4]);
        g.clear("c").await;
        assert_eq!(g.count("c", Duration::from_secs(60)).await, 1);
        assert!(!g.is_away());
    }

    #[tokio::test]
    async fn keys_disappear_once_they_are_fresh() {
        let (g, prefix) = gate("redis://127.0.0.1:6379").await;
        let fast = Rate::spaced(Duration::from_millis(50));
        g.reserve("x", fast, Duration::ZERO).await.unwrap();
        g.hold("y", Duration::from_millis(50)).await;
        g.count("z", Duration::from_millis(50)).await;
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let mut c = g.conn.clone();
        let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{prefix}*")).query_async(&mut c).await.unwrap();
        assert!(keys.is_empty(), "left behind: {keys:?}");
    }

    /// Forwards connections to the test Redis until the returned handle is aborted, which
    /// also drops every forwarded connection: Redis "goes away" for whoever used the proxy.
    async fn proxy() -> (String, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("redis://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let mut pipes = tokio::task::JoinSet::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                pipes.spawn(async move {
                    let mut redis = tokio::net::TcpStream::connect("127.0.0.1:6379").await.unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut redis).await;
                });
            }
        });
        (url, task)
    }

    #[tokio::test]
    async fn without_redis_the_local_gate_answers_at_once() {
        let (url, proxy) = proxy().await;
        let (g, _) = gate(&url).await;
        let spaced = Rate::spaced(Duration::from_secs(1));
        assert_eq!(g.reserve("k", spaced, Duration::ZERO).await, Ok(Duration::ZERO));
        proxy.abort();
        let _ = proxy.await;
        // (operation, answer from the local gate) while Redis is away; none may take long.
        let started = Instant::now();
        assert_eq!(g.reserve("k", spaced, Duration::ZERO).await, Ok(Duration::ZERO), "local state starts fresh");
        assert!(g.is_away());
        assert!(g.reserve("k", spaced, Duration::ZERO).await.is_err(), "and then limits locally");
        g.hold("h", Duration::from_secs(5)).await;
        assert!(g.held("h").await.is_some());
        assert_eq!(g.count("c", Duration::from_secs(60)).await, 1);
        assert_eq!(g.count("c", Duration::from_secs(60)).await, 2);
        g.clear("c").await;
        assert_eq!(g.count("c", Duration::from_secs(60)).await, 1);
        let took = started.elapsed();
        assert!(took < DEADLINE + Duration::from_millis(200), "{took:?}: the gate must not wait for Redis");
        assert_eq!(g.fallback().len(), 3);
    }
}
