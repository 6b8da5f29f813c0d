# One entry point. `make run`: the app on the embedded default. `make test`: the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Tests run against PostgreSQL and Redis (override to point elsewhere), then the `sqlite` subset
# on the embedded default (a SQLite file and the filesystem broker under var/test-sqlite/). The
# tests use Redis database 15, not 0 which a developer's running app may use; the bench keeps 0.
DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/evalsite
test: REDIS_URL ?= redis://127.0.0.1:6379/15
bench: REDIS_URL ?= redis://127.0.0.1:6379/0

.PHONY: install run test lint web worker bench

install: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
	touch $@

run: install
	./scripts/run.sh

test: install
	DATABASE_URL=$(DATABASE_URL) REDIS_URL=$(REDIS_URL) ./scripts/test-setup.sh
	DEBUG=1 DATABASE_URL=$(DATABASE_URL) REDIS_URL=$(REDIS_URL) CELERY_BROKER_URL=$(REDIS_URL) \
		$(VENV)/bin/pytest -p no:cacheprovider
	DEBUG=1 EVALSITE_VAR_DIR=$(CURDIR)/var/test-sqlite DATABASE_URL=sqlite:///$(CURDIR)/var/test-sqlite/evalsite.sqlite3 REDIS_URL= \
		CELERY_BROKER_URL=filesystem://localhost/ $(VENV)/bin/pytest -p no:cacheprovider -m sqlite

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

# The production processes (docker-compose.yml runs exactly these).
web:
	$(PY) manage.py migrate --noinput && $(PY) manage.py collectstatic --noinput && \
		$(VENV)/bin/gunicorn evalsite.wsgi --bind 0.0.0.0:8000 --workers 3 --access-logfile -

# WORKER_PROCESSES Celery processes (default: one per core) × WORKER_THREADS threads (default 16).
worker:
	$(PY) scripts/worker.py --loglevel INFO

bench: install
	DATABASE_URL=$(DATABASE_URL) $(PY) bench/prepare_db.py
	DATABASE_URL=$(DATABASE_URL) REDIS_URL=$(REDIS_URL) CELERY_BROKER_URL=$(REDIS_URL) \
		$(PY) bench/throughput.py --mode worker
	$(PY) bench/offline_wice.py
