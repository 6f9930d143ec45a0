# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
PORT ?= 8000

.PHONY: run test lint docs docs-serve openapi screenshots plots migrations-check worker-default worker-gpu beat serve clean

$(VENV)/.runtime: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt
	$(PIP) install --quiet -r requirements-dev.txt
	touch $@

# Laptop run: SQLite under var/, tasks inline, demo content and demo accounts (make run PORT=8001),
# served by gunicorn with a backlog for a classroom (ratinggame/embedded_server.py).
run: $(VENV)/.runtime
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	$(VENV)/bin/gunicorn -c python:ratinggame.embedded_server ratinggame.wsgi --bind 127.0.0.1:$(PORT)

# The whole test suite (SQLite unless DATABASE_URL points at PostgreSQL), on every core
# (pytest-xdist). The full-size run (CI's RATINGGAME_REQUIRE_SERVICES=1, or RATINGGAME_FULL_TESTS=1)
# runs the tests marked `machine` after the others, in one process: they stop and restart the
# machine's Redis and PostgreSQL, which a test running beside them would see. TEST_PROCESSES=0
# runs the suite in one process. Work stealing: a process that runs out of tests takes some of
# another's, so the slow browser tests at the end do not leave a core idle.
FULL_SIZE := $(filter 1,$(RATINGGAME_REQUIRE_SERVICES) $(RATINGGAME_FULL_TESTS))
TEST_PROCESSES ?= auto
# Byte code is cached for the tests even where the environment turns that off
# (PYTHONDONTWRITEBYTECODE=1, common in container images): every pytest process, and every server
# and worker a test starts, would otherwise compile the project's modules again, and pytest would
# rewrite each test module's asserts again (about 6 s of each process's start here).
test: export PYTHONDONTWRITEBYTECODE :=
test: $(VENV)/.dev
	$(VENV)/bin/pytest -n $(TEST_PROCESSES) --dist worksteal $(if $(FULL_SIZE),-m "not machine")
	$(if $(FULL_SIZE),$(VENV)/bin/pytest -n 0 -m machine)

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The documentation (MkDocs, Material theme): built with --strict, so a broken link or a page left
# out of the navigation fails; docs-serve rebuilds it as you edit.
docs: $(VENV)/.dev
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: $(VENV)/.dev
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8001

# The API's OpenAPI schema, as the API reference page renders it (tests/docs/test_docs.py checks it),
# on the embedded default: a field's integer bounds are the database's.
openapi: $(VENV)/.runtime
	env -u DATABASE_URL $(PY) manage.py spectacular --file docs/openapi.yaml --validate

# The documentation's pictures, taken from the demo in real Chromium (tests/docs/test_screenshots.py).
screenshots: $(VENV)/.dev
	RATINGGAME_DOCS_SCREENSHOTS=docs/img $(VENV)/bin/pytest -p no:cacheprovider -q tests/docs/test_screenshots.py

# The benchmarks page's plots, drawn from the figures benches printed (bench/figures/*.json).
plots: $(VENV)/.dev
	$(PY) bench/plots.py

migrations-check: $(VENV)/.runtime
	$(PY) manage.py makemigrations --check --dry-run

# Production pieces (docs/operators/deployment.md): each needs DATABASE_URL, CELERY_BROKER_URL, DJANGO_* set.
serve: $(VENV)/.runtime
	$(VENV)/bin/gunicorn ratinggame.wsgi --bind 0.0.0.0:8000 --workers 4

worker-default: $(VENV)/.runtime
	$(VENV)/bin/celery -A ratinggame worker -Q default --loglevel INFO

worker-gpu: $(VENV)/.runtime
	$(VENV)/bin/celery -A ratinggame worker -Q gpu --concurrency 1 --loglevel INFO

beat: $(VENV)/.runtime
	$(VENV)/bin/celery -A ratinggame beat --loglevel INFO

clean:
	rm -rf $(VENV) var site
