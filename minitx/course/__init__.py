"""The course itself: notebook set-up, the exercises and their checks, the teacher's tools,
and the experiments the notebooks run. May import every other subpackage.

    notebook          setup_notebook, seeds, show_source
    exercises         the auto-checked exercises of each notebook
    teacher           progress reports, run times and guides for teachers
    editions          the student and instructor editions of the notebooks
    handout           the student edition the package carries; minitx course DIR
    gradients         gradient norms against distance in an RNN (02)
    date_translation  training the RNN encoder-decoder on dates (03)
    relations         the attention-only model of the relations task (06)
    cost              time, memory and FLOPs of attention against an RNN (05)
    leak              what a model that sees the future learns (05)
    ladder            the GPT built one piece at a time (09)
    analysis          what a prediction relies on (09)
"""

from minitx.course.notebook import seed_everything, setup_notebook, show_source

__all__ = ["seed_everything", "setup_notebook", "show_source"]
