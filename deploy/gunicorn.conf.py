"""gunicorn's settings for the web tier: ``gunicorn -c deploy/gunicorn.conf.py ratinggame.wsgi``,
behind nginx (``deploy/nginx.conf``). Read by gunicorn itself; the site's settings come from the
environment as everywhere (docs/operators/configuration.md). ``GUNICORN_BIND`` and
``GUNICORN_WORKERS`` override the address and the number of processes."""

import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")  # nginx on the same machine proxies to it
# Processes and threads: a rating holds its database connection for a few milliseconds, an
# upload for as long as the client sends; threads keep a slow upload from holding a process.
workers = int(os.environ.get("GUNICORN_WORKERS", 2 * multiprocessing.cpu_count()))
threads = 4
# A manifest with its images, imported within its request up to the inline limits, can take
# minutes; nginx's proxy_read_timeout is the same.
timeout = 300
graceful_timeout = 30
# Idle keep-alive connections stay open longer than nginx's upstream keeps them (60 s): at
# gunicorn's default of 2 s a request on a connection just closed fails, and nginx does not send a
# POST again (ratinggame/embedded_server.py says what was measured).
keepalive = 75
# A worker is replaced after this many requests (a leak would cost nothing).
max_requests = 5000
max_requests_jitter = 500
# Only nginx on this machine may say which scheme and client a request came from.
forwarded_allow_ips = "127.0.0.1"
# The site writes one line per request itself (with its id); gunicorn's access log would repeat it.
accesslog = None
errorlog = "-"
