from setuptools import find_packages, setup

setup(
    name="deferstitch",
    version="0.1.0",
    description="Whole stacks from Linux deferred user callchains (perf, trace-cmd), "
                "with a report of what could not be stitched",
    packages=find_packages(include=["deferstitch", "deferstitch.*"]),
    python_requires=">=3.9",
    install_requires=["tabulate"],
    extras_require={
        "compressed": ["zstandard"],
        "test": ["pytest", "zstandard", "tabulate", "protobuf", "jsonschema", "hypothesis"],
    },
    entry_points={"console_scripts": ["deferstitch=deferstitch.cli:main"]},
)
