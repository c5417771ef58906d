"""The class store in Redis (ATTNVIZ_REDIS_URL): the pods of a deployment share one server.

Keys, all under `attnviz:class:{CODE}` and all expiring a day after the class ends:
the record (a hash of text fields), `:seats` (a set of students) and `:a:{step}` (a hash
student -> choice). The teacher's changes read and write the record under WATCH (optimistic:
retried when another client changed it in between); an answer is one Lua script (checks and
write in one step on the server, so 120 students answering at once never retry).
"""

from __future__ import annotations

from collections.abc import Callable

from .store import GRACE_S, StoreUnavailable, UnknownClass, decode, encode

PREFIX = "attnviz:class:"

# KEYS: record, seats, answers of the step. ARGV: step, student, choice, cap, now, expire-at.
ANSWER = """
local rec = redis.call('HMGET', KEYS[1], 'expires', 'step', 'shown', 'choices')
if not rec[1] then return 'unknown' end
if tonumber(ARGV[5]) >= tonumber(rec[1]) then return 'expired' end
if ARGV[1] ~= '-' then
  if rec[2] ~= ARGV[1] then return 'moved' end
  if rec[3] ~= '0' then return 'revealed' end
  if tonumber(ARGV[3]) >= tonumber(rec[4]) then return 'choice' end
end
if redis.call('SISMEMBER', KEYS[2], ARGV[2]) == 0 then
  if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 'full' end
  redis.call('SADD', KEYS[2], ARGV[2])
  redis.call('EXPIREAT', KEYS[2], ARGV[6])
end
if ARGV[1] ~= '-' then
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
  redis.call('EXPIREAT', KEYS[3], ARGV[6])
end
return 'ok'
"""


class RedisBackend:
    """Classes, seats and answers in the Redis server at `url` (redis://host:port/db)."""

    def __init__(self, url: str, client=None):
        import redis

        self.errors = (redis.ConnectionError, redis.TimeoutError)
        self.r = client or redis.Redis.from_url(url, decode_responses=True, socket_timeout=5,
                                                socket_connect_timeout=5,
                                                health_check_interval=30)
        self._answer = self.r.register_script(ANSWER)

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except self.errors as e:
            raise StoreUnavailable(str(e)) from e

    @staticmethod
    def key(code: str, tail: str = "") -> str:
        return PREFIX + code + tail

    @staticmethod
    def _end(rec: dict) -> int:
        return int(rec["expires"] + GRACE_S) + 1

    def insert(self, rec: dict) -> bool:
        def go() -> bool:
            k = self.key(rec["code"])
            with self.r.pipeline() as p:
                p.hsetnx(k, "code", rec["code"])
                done = p.execute()[0]
            if not done:
                return False
            with self.r.pipeline() as p:
                p.hset(k, mapping=encode(rec))
                p.expireat(k, self._end(rec))
                p.execute()
            return True

        return self._call(go)

    def load(self, code: str) -> dict | None:
        raw = self._call(self.r.hgetall, self.key(code))
        return decode(raw) if raw and "teacher" in raw else None

    def change(self, code: str, fn: Callable[[dict], dict]) -> dict:
        k = self.key(code)
        out: list[dict] = []

        def tx(p) -> None:
            raw = p.hgetall(k)
            if not raw or "teacher" not in raw:
                raise UnknownClass()
            new = fn(decode(raw))
            p.multi()
            p.hset(k, mapping=encode(new))
            out[:] = [new]

        self._call(self.r.transaction, tx, k)
        return out[0]

    def _script(self, code: str, step, student: str, choice: int, cap: int,
                now: float) -> str:
        rec_key = self.key(code)
        end = self._call(self.r.hget, rec_key, "expires")
        expire_at = int(float(end) + GRACE_S) + 1 if end else int(now + GRACE_S)
        return self._call(self._answer, [rec_key, self.key(code, ":seats"),
                                         self.key(code, f":a:{step}")],
                          [str(step), student, choice, cap, repr(now), expire_at])

    def join(self, code: str, student: str, cap: int, now: float) -> str:
        return self._script(code, "-", student, 0, cap, now)

    def answer(self, code: str, student: str, step: int, choice: int, cap: int,
               now: float) -> str:
        return self._script(code, step, student, choice, cap, now)

    def students(self, code: str) -> int:
        return self._call(self.r.scard, self.key(code, ":seats"))

    def answers(self, code: str, step: int) -> dict[str, int]:
        raw = self._call(self.r.hgetall, self.key(code, f":a:{step}"))
        return {s: int(c) for s, c in raw.items()}

    def steps(self, code: str) -> list[int]:
        keys = self._call(lambda: list(self.r.scan_iter(self.key(code, ":a:*"))))
        return sorted(int(k.rsplit(":", 1)[1]) for k in keys)

    def purge(self, now: float) -> None:
        """Nothing to do: every key expires by itself (EXPIREAT)."""
