"""The benchmarks of ``tools/bench.py``, one module per subcommand (``ca``, ``sizes``, ``models``,
``memory``, ``wheel``, ``overlay``, ``stack``, ``report``, ``first``) over a shared core
(:mod:`.core`: the venvs, the workers, timing and tables; :mod:`.workloads`: the compiled-autograd
workload worker).  The scripts that run inside a torch venv are in ``tools/workers/``."""
