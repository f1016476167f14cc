import sys

from minitx.course.teacher import main

sys.exit(main())
