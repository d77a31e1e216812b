# Two commands: `make run` and `make test` (Chromium and pdflatex installed when missing, the import
# contracts in pyproject.toml, then pytest). Each creates .venv when it is missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export GRADIO_ANALYTICS_ENABLED := False
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: run test lint clean

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt requirements.txt $(VENV)/.installed
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

run: $(VENV)/.installed
	$(PY) launch.py $(ARGS)

test: $(VENV)/.installed-dev
	bash scripts/test_system_deps.sh
	$(VENV)/bin/lint-imports --no-logo
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV)
