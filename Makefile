# deferstitch: `make demo` runs the main job on the bundled capture, `make test` every test.
PYTHON ?= python3
EXAMPLE = examples/compressed.data

.PHONY: install demo test plugin

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
