"""Sidecar metadata: a JSON file beside an image or a folder's mambo.jsonl manifest, validated into
Metadata; NoSidecars when a folder is indexed bare."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mambomeme.images import BadInput
from mambomeme.library import RIGHTS_STATUSES, SAFETY_CLASSES, clean_line, show_path

MANIFEST_NAME = "mambo.jsonl"
# A sidecar is a few hundred bytes; a megabyte is certainly not metadata. A folder manifest holds
# one ~500-byte line per image: 50 MB is ~100,000 images in one folder.
MAX_SIDECAR_BYTES = 1_000_000
MAX_MANIFEST_BYTES = 50_000_000


# ─────────────────────────────────────────────────────────────────────────────
# Sidecars and OCR
# ─────────────────────────────────────────────────────────────────────────────

SIDECAR_TEXT_FIELDS = ("title", "template", "description", "source_url", "creator", "licence")
SIDECAR_FIELDS = (*SIDECAR_TEXT_FIELDS, "entities", "tags", "safety", "rights", "private")


@dataclass
class Metadata:
    title: str = ""
    template: str = ""
    entities: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    description: str = ""
    source_url: str = ""
    creator: str = ""
    licence: str = ""
    safety: str = "safe"
    rights: str = "unknown"
    private: bool = False
    source: str = "none"
    given: frozenset[str] = frozenset()  # the keys the sidecar actually set

    def merged(self, other: Metadata) -> Metadata:
        """Exact duplicates with two sidecars: this one's keys win, the other fills the keys this
        one left out; where both set safety, rights or privacy, the stricter holds."""
        out = Metadata(**{k: getattr(self, k) for k in SIDECAR_FIELDS}, source=self.source, given=self.given)
        for key in other.given:
            mine, theirs = getattr(self, key), getattr(other, key)
            if key not in self.given:
                setattr(out, key, theirs)
            elif key == "safety":
                out.safety = max(mine, theirs, key=SAFETY_CLASSES.index)
            elif key == "rights" and "withdrawn" in (mine, theirs):
                out.rights = "withdrawn"
            elif key == "private":
                out.private = mine or theirs
        out.given = self.given | other.given
        if other.source not in out.source:
            out.source = f"{out.source}+{other.source}" if out.given - other.given else other.source
        return out

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Metadata:
        """An item's stored metadata; the keys it holds a value for count as given."""
        md = cls(**{k: row[k] for k in SIDECAR_TEXT_FIELDS}, entities=json.loads(row["entities"]),
                 tags=json.loads(row["tags"]), safety=row["safety"], rights=row["rights"],
                 private=bool(row["private"]), source=row["metadata_source"])
        if md.source != "none":
            md.given = frozenset(k for k in SIDECAR_FIELDS if getattr(md, k) or k in ("safety", "rights", "private"))
        return md

    def params(self) -> dict[str, Any]:
        return {
            "safety_source": "sidecar" if "safety" in self.given else "default",
            "safety_rank": SAFETY_CLASSES.index(self.safety),
            "title": self.title,
            "template": self.template,
            "entities": json.dumps(self.entities, ensure_ascii=False),
            "tags": json.dumps(self.tags, ensure_ascii=False),
            "description": self.description,
            "source_url": self.source_url,
            "creator": self.creator,
            "licence": self.licence,
            "safety": self.safety,
            "rights": self.rights,
            "private": int(self.private),
            "metadata_source": self.source,
        }


def parse_metadata(obj: Any, source: str) -> Metadata:
    """Validate one sidecar object. Unknown keys are ignored (forward compatible); wrong types and
    values are errors naming the key, so a typo never silently changes safety or rights."""
    if not isinstance(obj, dict):
        raise BadInput("sidecar", f"{source}: expected a JSON object")
    md = Metadata(source=source)
    obj = dict(obj)
    if "license" in obj and "licence" not in obj:
        obj["licence"] = obj.pop("license")
    md.given = frozenset(k for k in SIDECAR_FIELDS if obj.get(k) is not None)
    for key in SIDECAR_TEXT_FIELDS:
        if key in obj and obj[key] is not None:
            if not isinstance(obj[key], str):
                raise BadInput("sidecar", f"{source}: '{key}' must be a string")
            setattr(md, key, clean_line(obj[key])[:2000])
    for key in ("entities", "tags"):
        if key in obj and obj[key] is not None:
            val = obj[key]
            if isinstance(val, str):
                val = [val]
            if not isinstance(val, list) or not all(isinstance(v, str) for v in val):
                raise BadInput("sidecar", f"{source}: '{key}' must be a list of strings")
            setattr(md, key, [c for c in (clean_line(v)[:200] for v in val) if c][:100])
    if obj.get("safety") is not None:
        if obj["safety"] not in SAFETY_CLASSES:
            raise BadInput("sidecar", f"{source}: 'safety' must be one of {', '.join(SAFETY_CLASSES)}")
        md.safety = obj["safety"]
    if obj.get("rights") is not None:
        if obj["rights"] not in RIGHTS_STATUSES:
            raise BadInput("sidecar", f"{source}: 'rights' must be one of {', '.join(RIGHTS_STATUSES)}")
        md.rights = obj["rights"]
    if obj.get("private") is not None:
        if not isinstance(obj["private"], bool):
            raise BadInput("sidecar", f"{source}: 'private' must be true or false")
        md.private = obj["private"]
    return md


def _read_small(path: Path, limit: int = MAX_SIDECAR_BYTES) -> bytes:
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise BadInput("sidecar", f"{show_path(path.name)} is over {limit:,} bytes")
    return data


class SidecarFinder:
    """Finds an image's metadata: `NAME.json` (or `NAME.png.json`) beside it, else its line in the
    folder's `mambo.jsonl` manifest. Manifest lines can only describe files inside that folder."""

    def __init__(self) -> None:
        self._manifests: dict[Path, tuple[str, dict[str, Any], list[BadInput]]] = {}

    def _manifest(self, folder: Path) -> tuple[str, dict[str, Any], list[BadInput]]:
        if folder not in self._manifests:
            entries: dict[str, Any] = {}
            errors: list[BadInput] = []
            sha = ""
            path = folder / MANIFEST_NAME
            if path.is_file():
                try:
                    data = _read_small(path, MAX_MANIFEST_BYTES)
                except BadInput as e:
                    errors.append(e)
                    data = b""
                except OSError as e:
                    errors.append(BadInput("sidecar", f"{MANIFEST_NAME}: unreadable ({e.strerror})"))
                    data = b""
                sha = hashlib.sha256(data).hexdigest()
                for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                    if not line.strip():
                        continue
                    try:
                        obj = json.loads(line)
                        rel = obj.get("file") if isinstance(obj, dict) else None
                        if not isinstance(rel, str) or not rel:
                            raise ValueError("no 'file' key")
                        try:
                            target = (folder / rel).resolve()
                        except (OSError, RuntimeError) as e:  # a symlink loop, a name too long
                            raise ValueError(f"'file' {rel!r} cannot be resolved ({clean_line(e)})") from e
                        if folder.resolve() not in target.parents:
                            raise ValueError(f"'file' {rel!r} points outside the folder")
                        entries[str(target)] = (n, obj)
                    except (ValueError, AttributeError) as e:
                        errors.append(BadInput("sidecar", f"{MANIFEST_NAME} line {n}: {clean_line(e)}"))
                    except RecursionError:
                        errors.append(BadInput("sidecar", f"{MANIFEST_NAME} line {n}: nested too deeply"))
            self._manifests[folder] = (sha, entries, errors)
        return self._manifests[folder]

    def manifest_errors(self, folder: Path) -> list[BadInput]:
        return self._manifest(folder)[2]

    def find(self, image: Path) -> tuple[str, Metadata | None, BadInput | None]:
        """(checksum of the metadata source, metadata, error). Errors leave metadata None."""
        for cand in (image.with_suffix(".json"), image.with_name(image.name + ".json")):
            if cand.is_file():
                try:
                    data = _read_small(cand)
                    sha = hashlib.sha256(data).hexdigest()
                except OSError as e:
                    return "", None, BadInput("sidecar", f"{show_path(cand.name)}: unreadable ({e.strerror})")
                except BadInput as e:
                    return "", None, e
                try:
                    obj = json.loads(data.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as e:
                    return sha, None, BadInput(
                        "sidecar", f"{show_path(cand.name)} is not valid JSON ({clean_line(e)}); fix or remove it"
                    )
                except RecursionError:  # "[[[[..." a million deep: Python's parser gives up
                    return sha, None, BadInput(
                        "sidecar", f"{show_path(cand.name)} is nested too deeply to be metadata; fix or remove it")
                try:
                    return sha, parse_metadata(obj, f"sidecar:{cand.name}"), None
                except BadInput as e:
                    return sha, None, e
        sha, entries, _errors = self._manifest(image.parent)
        hit = entries.get(str(image.resolve()))
        if hit is None:
            return "", None, None
        n, obj = hit
        line_sha = hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()
        try:
            return line_sha, parse_metadata(obj, f"manifest:{MANIFEST_NAME}:{n}"), None
        except BadInput as e:
            return line_sha, None, e


class NoSidecars(SidecarFinder):
    """`mambo add --no-sidecars`: ingest a folder bare, as a real downloads folder is (sidecars and
    manifests are not read), so a library can be compared with and without its metadata."""

    def manifest_errors(self, folder: Path) -> list[BadInput]:
        return []

    def find(self, image: Path) -> tuple[str, Metadata | None, BadInput | None]:
        return "", None, None
