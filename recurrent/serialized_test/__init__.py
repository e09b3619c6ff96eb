"""Caffe2's serialized_test package, as far as its tests' imports need it (see serialized_test_util)."""
