import sys

from workbench.evolve.cli import evolve_main

sys.exit(evolve_main())
