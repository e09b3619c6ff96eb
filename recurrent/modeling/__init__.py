"""Caffe2's ``caffe2.python.modeling`` modules that this package has:
``initializers`` (Initializer, ExternalInitializer, update_initializer),
``parameter_sharing`` (ParameterSharing) and ``parameter_info`` (ParameterTags,
ParameterInfo), so ``from caffe2.python.modeling.X
import ...`` ports as ``from recurrent.modeling.X import ...``."""
