"""The runner tests' repositories for the fleet: a directory every account can traverse
(`shared_dir`) and acme/widgets in it (`origin`)."""

from tests.workers.session.runner.conftest import origin, shared_dir

__all__ = ["origin", "shared_dir"]
