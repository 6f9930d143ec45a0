"""gunicorn's settings for ``make run``, the embedded default (SQLite, tasks inline, the demo):
``gunicorn -c python:ratinggame.embedded_server ratinggame.wsgi --bind 127.0.0.1:8000``.

A classroom signs up at once: Django's development server listens with a backlog of 5, so the
sixth connection that arrives before the first is accepted is reset. gunicorn listens with a
backlog of 2048 and answers from threads. One process: the embedded mode keeps its cache (the
rate limits) and its background tasks in the web process, so a second process would keep a
second count of each limit. The reference deployment's settings are deploy/gunicorn.conf.py."""

bind = "127.0.0.1:8000"
workers = 1
threads = 16
backlog = 2048
# Idle keep-alive connections stay open longer than clients keep them (browsers for minutes, httpx
# 5 s): at gunicorn's default of 2 s a request on a connection just closed fails with "server
# disconnected" (3 of 10 bursts of 30 raters had one; docs/benchmarks.md).
keepalive = 75
# An upload imported inline (its images resized in the request) can take minutes.
timeout = 300
graceful_timeout = 5
# The site writes one line per request itself; gunicorn's access log would repeat it.
accesslog = None
errorlog = "-"
# No control socket: its one path under the home folder would be shared by two `make run`s.
control_socket_disable = True
