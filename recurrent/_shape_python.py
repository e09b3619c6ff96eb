"""Shape inference of the Python op (recurrent/python_op.py): none. Its outputs are whatever the
Python function makes them."""

from .shape_inference import not_inferred

not_inferred("a Python function decides its outputs' shapes when it runs", "Python", "PythonGradient")
