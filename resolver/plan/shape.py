"""The shape of a plan's JSON (:meth:`resolver.core.model.Plan.to_json`) as a record is read back: the plan
memo and the locked plans check it before a field is trusted. Light on purpose: a remembered plan is
read without loading the plan types."""

from __future__ import annotations


def plan_shape():
    """The shape of :meth:`resolver.core.model.Plan.to_json`, for a plan read back from a record."""
    from resolver.core.records import Fields, Flag, ListOf, MapOf, Text, optional

    text, long = Text(max_len=4096), Text(max_len=1 << 16)
    return Fields({
        "backend": Text("cpu|cuda|rocm"), "backend_version": optional(text), "python": Text(r"3\.\d+", 8),
        "platform": text, "target": text, "environment": Text(r"[a-z0-9-]{1,64}", 64),
        "torch": Fields({"version": text, "variant": text, "source": Fields({"kind": text, "url": text}),
                         "conda": optional(Fields({"channel": text, "spec": text})), "cxx11_abi": Flag(),
                         "requirement": text}),
        "kernels": Fields({"strategy": Text("build|prebuilt|none"), "arch_list": ListOf(text, 256),
                           "packages": MapOf(text), "toolkit": optional(text), "toolkit_source": optional(text),
                           "prebuilt_wheels": MapOf(text)}),
        "patches": ListOf(Fields({"id": text, "file": text}), 256), "warnings": ListOf(long, 1024),
        "trace": ListOf(Fields({"rule": text, "result": long, "because": long}), 4096),
        "glibc": optional(text), "cuda_driver": optional(text), "runnable_here": Flag(), "summary": long,
        "conda_packages": MapOf(text)})
