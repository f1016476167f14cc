import sys

from minitx.exercises.teacher import main

sys.exit(main())
