"""A Redis cache that fails open: when Redis is down, the site goes on without its cache.

The cache only holds counters (API throttles, the log-in limiter). Losing them for a while
means no rate limiting for a while, which is better than refusing every API request, rating
included, while Redis restarts. Each failure is logged; the socket timeouts keep a dead Redis
from slowing requests down.
"""

import functools
import logging

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

# Seconds to wait for Redis before treating it as down.
SOCKET_TIMEOUT_SECONDS = 0.5


def _fail_open(fallback):
    """Run the client method; on a Redis error log it and answer ``fallback(*args)`` instead."""

    def decorator(method):
        @functools.wraps(method)
        def wrapper(self, *args):
            try:
                return method(self, *args)
            except RedisError as error:
                log.warning("cache unavailable (%s %s): running without it", method.__name__, type(error).__name__)
                return fallback(*args)

        return wrapper

    return decorator


class FailOpenRedisCacheClient(RedisCacheClient):
    add = _fail_open(lambda key, value, timeout: True)(RedisCacheClient.add)
    get = _fail_open(lambda key, default: default)(RedisCacheClient.get)
    set = _fail_open(lambda key, value, timeout: None)(RedisCacheClient.set)
    touch = _fail_open(lambda key, timeout: False)(RedisCacheClient.touch)
    delete = _fail_open(lambda key: False)(RedisCacheClient.delete)
    get_many = _fail_open(lambda keys: {})(RedisCacheClient.get_many)
    has_key = _fail_open(lambda key: False)(RedisCacheClient.has_key)
    incr = _fail_open(lambda key, delta: delta)(RedisCacheClient.incr)
    set_many = _fail_open(lambda data, timeout: [])(RedisCacheClient.set_many)
    delete_many = _fail_open(lambda keys: None)(RedisCacheClient.delete_many)
    clear = _fail_open(lambda: False)(RedisCacheClient.clear)


class FailOpenRedisCache(RedisCache):
    def __init__(self, server, params):
        options = params.setdefault("OPTIONS", {})
        options.setdefault("socket_connect_timeout", SOCKET_TIMEOUT_SECONDS)
        options.setdefault("socket_timeout", SOCKET_TIMEOUT_SECONDS)
        super().__init__(server, params)
        self._class = FailOpenRedisCacheClient
