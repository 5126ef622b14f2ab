.PHONY: help build-dev test-rust test lint bench demo

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' Makefile | sed 's/:.*## /\t/'

build-dev:  ## build an optimised (no-LTO) wheel and install it
	maturin build --profile dev-release -o target/wheels-dev
	pip install --force-reinstall --no-deps target/wheels-dev/rgrad-*.whl

test-rust:  ## the core's tests, no Python needed
	cargo test -q

test: build-dev test-rust  ## everything
	python -m pytest -q

lint:  ## formatting and lints
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --features python -- -D warnings
	MYPYPATH=python python -m mypy.stubtest rgrad._C --allowlist .stubtest/allowlist.txt --mypy-config-file .stubtest/mypy.ini

bench:  ## criterion benches of the core
	cargo bench

demo:  ## the tutorial and a tiny model
	python examples/demo.py
