# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
PORT ?= 8000

.PHONY: run test lint migrations-check worker-default worker-gpu beat serve clean

$(VENV)/.runtime: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt
	$(PIP) install --quiet -r requirements-dev.txt
	touch $@

# Laptop run: SQLite under var/, tasks inline, demo content and demo accounts (make run PORT=8001).
run: $(VENV)/.runtime
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	$(PY) manage.py runserver 127.0.0.1:$(PORT)

# The whole test suite (SQLite unless DATABASE_URL points at PostgreSQL).
test: $(VENV)/.dev
	$(VENV)/bin/pytest

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

migrations-check: $(VENV)/.runtime
	$(PY) manage.py makemigrations --check --dry-run

# Production pieces (see README): each needs DATABASE_URL, CELERY_BROKER_URL, DJANGO_* set.
serve: $(VENV)/.runtime
	$(VENV)/bin/gunicorn ratinggame.wsgi --bind 0.0.0.0:8000 --workers 4

worker-default: $(VENV)/.runtime
	$(VENV)/bin/celery -A ratinggame worker -Q default --loglevel INFO

worker-gpu: $(VENV)/.runtime
	$(VENV)/bin/celery -A ratinggame worker -Q gpu --concurrency 1 --loglevel INFO

beat: $(VENV)/.runtime
	$(VENV)/bin/celery -A ratinggame beat --loglevel INFO

clean:
	rm -rf $(VENV) var
