"""Shared by every test and every notebook that pytest checks (nbval's kernels inherit the
environment): 'auto' device choices stay on the CPU, because the notebooks' stored outputs
are a CPU run and the tests' expected values are CPU figures. A value already set in the
environment is kept."""

import os

os.environ.setdefault("MINITX_DEVICE", "cpu")
