"""Package discovery: the code is found, not listed; shipped data folders map into ipuopt.data.

specs/, solvers/ and models/ live at the top of the repository (users and docs name them
there) and ship inside the package so a normal install finds them by name.

The arena search's dive and the exchange's list greedy are also built in C
(ipuopt/arena/_dive.c, ipuopt/exchange/_lists.c; the Python headers and a C compiler;
optional: without them the numpy dive and the Python greedy run, the same decisions far
slower).
"""

from setuptools import Extension, find_packages, setup

DATA = {
    "ipuopt.data.specs": "specs",
    "ipuopt.data.solvers": "solvers",
    "ipuopt.data.models": "models",
    "ipuopt.data.models.examples": "models/examples",
    "ipuopt.data.models.arenas": "models/arenas",
    "ipuopt.data.models.layouts": "models/layouts",
}

setup(
    packages=find_packages(include=["ipuopt", "ipuopt.*"]) + list(DATA),
    package_dir=DATA,
    package_data={**{name: ["*.yaml", "*.json"] for name in DATA}, "ipuopt.render": ["*.js"]},
    ext_modules=[Extension(name, [path], optional=True, extra_compile_args=["-O2"])
                 for name, path in (("ipuopt.arena._dive", "ipuopt/arena/_dive.c"),
                                    ("ipuopt.exchange._lists", "ipuopt/exchange/_lists.c"))],
)
