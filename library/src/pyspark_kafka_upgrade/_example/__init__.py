"""Page views: the reference pipeline, in the shape of a generated project.

The library's own tests, proofs and benchmarks run on it; the template's default project is
the same pipeline (a template test holds the two together).
"""
