from fbo.optuna import FboSampler, Federation, optimize, spec_from_search_space

__all__ = ["FboSampler", "Federation", "optimize", "spec_from_search_space"]
