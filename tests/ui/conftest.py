"""Explorer tests run a whole hookspawn (tests/pipeline) and read /ui over real HTTP."""

from __future__ import annotations

from tests.pipeline.conftest import github as github  # the stand-in fixture
