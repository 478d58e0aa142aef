"""Explorer tests run a whole hookspawn (the delivery pipeline's stack) and read /ui over HTTP."""

from __future__ import annotations

from tests.workers.delivery.pipeline.conftest import github as github  # the stand-in fixture
