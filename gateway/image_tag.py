"""The sandbox image's content-hash tag: what ``serve`` runs unless ``sandbox_image`` names another.

Every tag is a hash of what went into the image, so an unchanged image is never rebuilt and a
changed one can never be mistaken for the old. Computing a tag only reads the shipped files;
building the images is operator tooling (:mod:`gateway.ops.images`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from gateway.paths import resource, sandbox_package

IMAGE_PREFIX = "cypher-gateway"
Variant = Literal["python", "java", "java21"]
# An image input: the name it is hashed under, and where it is read from. The name is the
# file's path in the repository, so a checkout and an installed wheel of the same sources
# compute the same tags (an image built from either is current for both).
Input = tuple[str, Path]


def digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:12]


def docker_file(*parts: str) -> Input:
    return "/".join(("docker", *parts)), resource("docker", *parts)


def file_parts(inputs: Iterable[Input]) -> Iterable[bytes]:
    for name, path in inputs:
        yield name.encode()
        yield path.read_bytes()


def base_image_tag(variant: Variant) -> str:
    parts = [variant.encode(), *file_parts([docker_file("base", "rootfs.sh")])]
    return f"{IMAGE_PREFIX}/base-{variant}:{digest(parts)}"


def _sandbox_sources() -> list[Input]:
    root = sandbox_package()
    paths = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    return [("sandbox/" + p.relative_to(root).as_posix(), p) for p in paths]


def sandbox_inputs() -> list[Input]:
    return [docker_file("sandbox", "Dockerfile"), docker_file("sandbox", "requirements.txt"), *_sandbox_sources()]


def sandbox_image_tag() -> str:
    return f"{IMAGE_PREFIX}/sandbox:{digest([base_image_tag('python').encode(), *file_parts(sandbox_inputs())])}"
