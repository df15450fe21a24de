# deferstitch: `make demo` runs the main job on the bundled capture, `make test` every test.
PYTHON ?= python3
EXAMPLE = examples/compressed.data

.PHONY: install demo test plugin asan

install:
	$(PYTHON) -m pip install -q -e '.[test]'

demo: install
	deferstitch info $(EXAMPLE)
	deferstitch report $(EXAMPLE)
	deferstitch stitch $(EXAMPLE) -o /tmp/deferstitch-demo.data
	deferstitch folded $(EXAMPLE) --symfs examples/symfs --kallsyms examples/kallsyms.xz | sort -k2 -n -r | head -5

test: install
	$(PYTHON) -m pytest -q tests

# trace-cmd report plugin (tracecmd_plugin/): into ~/.local/lib/traceevent/plugins, or PLUGIN_DIR=DIR
plugin:
	$(MAKE) -C tracecmd_plugin install $(if $(PLUGIN_DIR),PLUGIN_DIR=$(PLUGIN_DIR))

# The C engine under AddressSanitizer and UBSan: a sanitized build in a copy of the tree, then the
# engine's tests and the fuzz cases on it (FUZZ=N cases; memory errors abort the run).
ASAN_DIR = /tmp/deferstitch-asan
FUZZ ?= 3000
asan:
	rm -rf $(ASAN_DIR) && mkdir -p $(ASAN_DIR) && cp -r deferstitch tests $(ASAN_DIR)/ && rm -f $(ASAN_DIR)/deferstitch/*.so
	gcc -shared -fPIC -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	  -I$$($(PYTHON) -c "import sysconfig; print(sysconfig.get_paths()['include'])") deferstitch/_accel.c \
	  -o $(ASAN_DIR)/deferstitch/_accel$$($(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
	cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1 \
	  LD_PRELOAD=$$(gcc -print-file-name=libasan.so):$$(gcc -print-file-name=libubsan.so) \
	  PYTHONPATH=$(ASAN_DIR) DEFERSTITCH_SHARED=$(abspath ..)/shared DEFERSTITCH_FUZZ_EXAMPLES=$(FUZZ) \
	  $(PYTHON) -m pytest -q -p no:cacheprovider tests/test_accel.py tests/test_fuzz.py
