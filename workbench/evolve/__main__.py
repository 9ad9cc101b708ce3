"""`python -m workbench.evolve`: the same command as `workbench evolve`."""
import sys

from workbench.evolve.evolve_cli import evolve_main

sys.exit(evolve_main())
