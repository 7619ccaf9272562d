"""``upgrade``: a new PyTorch/CUDA environment beside the current one, proven against it, then promoted.

* :mod:`.step`: the step (the current environment and its plan, the new plan and its name);
* :mod:`.risks`: what changes and the risks the knowledge base knows for the step, each with its source;
* :mod:`.journey`: plan → lock beside (the current entries byte for byte) → install → kernels → prove →
  report → promote; resumable; ``promote`` and ``rollback``;
* :mod:`.proof`: verify in the new environment, then the same checkpoint and inputs through both:
  logits and generations per dtype against stated tolerances, speed, the warnings the new torch raises;
* :mod:`.lockdiff`: one environment's pixi.lock entries as text, and two environments' difference in words;
* :mod:`.report`: the Markdown and JSON reports;
* :mod:`.record`: ``[tool.resolver.upgrade]`` in pixi.toml, the project's default environment;
* :mod:`.fleet`: the step for every class of a fleet, with the kernel variants CI builds.

Nothing is imported here: every command asks :mod:`.record` for the default environment, and must not
pay for the rest.
"""
