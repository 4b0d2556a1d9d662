"""Sidecar metadata: a JSON file beside an image or a folder's mambo.jsonl manifest, validated into
Metadata; NoSidecars when a folder is indexed bare.

Fail closed: metadata that cannot be read, or is read twice with disagreement, never makes an item
more visible. A value of `private`, `rights` or `safety` that cannot be read holds the item at the
stricter reading (private, withdrawn, unsafe); a sidecar that cannot be read at all, or an image a
broken manifest line may describe, holds the item private. Each is reported as an ingest error
naming the file and the field; every other field is still read."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mambomeme.images import BadInput
from mambomeme.library import RIGHTS_STATUSES, SAFETY_CLASSES
from mambomeme.output import clean_line, show_path

MANIFEST_NAME = "mambo.jsonl"
# The image files a folder is read for (ingest) and that a sidecar may describe.
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
# A sidecar is a few hundred bytes; a megabyte is certainly not metadata. A manifest has the same
# cap (~2,000 lines of ~500 bytes): a million-line one took 98 s and 2.2 GB to read, with nothing
# said. Over it, the manifest is one error and every image it may describe is held private.
MAX_SIDECAR_BYTES = 1_000_000
MAX_MANIFEST_BYTES = MAX_SIDECAR_BYTES


# ─────────────────────────────────────────────────────────────────────────────
# Sidecars and OCR
# ─────────────────────────────────────────────────────────────────────────────

SIDECAR_TEXT_FIELDS = ("title", "template", "description", "source_url", "creator", "licence")
SIDECAR_FIELDS = (*SIDECAR_TEXT_FIELDS, "entities", "tags", "safety", "rights", "private")
# The fields that decide whether an item may be shown, and the reading each takes when in doubt:
# hidden under mambo-safety-v1 whatever the doubt was.
STRICT_FIELDS = ("safety", "rights", "private")
HELD = {"safety": "unsafe", "rights": "withdrawn", "private": True}


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
    doubts: frozenset[str] = frozenset()  # strict fields held at the stricter reading (not stated)
    problems: list[str] = field(default_factory=list)  # what could not be read, for the ingest error

    @property
    def stated(self) -> list[str]:
        """The strict fields a person stated readably: these win over a perceptual group's state."""
        return [k for k in STRICT_FIELDS if k in self.given and k not in self.doubts]

    def hold(self, key: str, why: str) -> None:
        """Doubt about a strict field: take the stricter reading and say so."""
        setattr(self, key, HELD[key])
        self.given |= {key}
        self.doubts |= {key}
        self.problems.append(why)

    def merged(self, other: Metadata) -> Metadata:
        """Two descriptions of one image (two sidecars, two manifest lines, an exact duplicate's
        sidecar): this one's keys win, the other fills the keys this one left out; where both set
        safety, rights or privacy, the stricter holds."""
        out = Metadata(
            **{k: getattr(self, k) for k in SIDECAR_FIELDS},
            source=self.source,
            given=self.given,
            doubts=self.doubts | other.doubts,
            problems=[*self.problems, *other.problems],
        )
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

    def disagrees(self, other: Metadata) -> list[str]:
        """The keys both set to different values."""
        return [
            k for k in SIDECAR_FIELDS if k in self.given and k in other.given and getattr(self, k) != getattr(other, k)
        ]

    def params(self) -> dict[str, Any]:
        return {
            "safety_source": "sidecar" if "safety" in self.given else "default",
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
            "stated": json.dumps(self.stated),
        }


def held_private(source: str, why: str) -> Metadata:
    """Metadata that exists but cannot be read: the item is held private until it is fixed."""
    md = Metadata(source=source)
    md.hold("private", f"{why}; the image is kept private until that is fixed")
    return md


class Pairs(dict):
    """A JSON object as read by `read_json`: the keys given more than once keep all their values in
    `repeated` (json.loads would keep the last one silently)."""

    repeated: dict[str, list[Any]]


def _pairs(items: list[tuple[str, Any]]) -> Pairs:
    out = Pairs()
    out.repeated = {}
    for key, value in items:
        if key in out:
            out.repeated.setdefault(key, [out[key]]).append(value)
        out[key] = value
    return out


def read_json(text: str) -> Any:
    """json.loads that keeps every value of a repeated key (see Pairs)."""
    return json.loads(text, object_pairs_hook=_pairs)


def loose(name: str) -> str:
    """A key or file name as a person might not tell it apart: Unicode-normalised (NFC; macOS
    writes NFD), case-folded, outer white space dropped."""
    return unicodedata.normalize("NFC", name).casefold().strip()


KNOWN_KEYS = {loose(k): k for k in (*SIDECAR_FIELDS, "license", "file")}


def parse_metadata(obj: Any, source: str) -> Metadata:
    """Validate one sidecar object, key by key. Unknown keys are ignored (forward compatible). A
    wrong type or value drops that key alone and is reported; for safety, rights and privacy it
    takes the stricter reading instead, so no error can make an item more visible. So does doubt
    about which value or key was meant: a key given twice, or a key that differs from a known one
    only by case, white space or Unicode form ("Private", " private")."""
    if not isinstance(obj, dict):
        return held_private(source, "expected a JSON object")
    md = Metadata(source=source)
    repeated = dict(getattr(obj, "repeated", {}))
    obj = dict(obj)
    doubt: dict[str, str] = {}
    for key in list(obj):
        known = KNOWN_KEYS.get(loose(key)) if isinstance(key, str) else None
        if known is None or known == key:
            continue
        value = obj.pop(key)
        if known in STRICT_FIELDS:
            doubt[known] = f"key {key!r} is not {known!r} (keys are lower case, without spaces)"
            repeated.setdefault(known, [obj[known]] if known in obj else []).append(value)
            obj[known] = value
        else:
            md.problems.append(f"key {key!r} is not {known!r}: ignored (keys are lower case, without spaces)")
    for key in STRICT_FIELDS:
        if key in repeated:
            doubt.setdefault(key, f"{key!r} given {len(repeated[key])} times")
    for key in set(repeated) - set(STRICT_FIELDS):
        md.problems.append(f"{key!r} given {len(repeated[key])} times (the last one is read)")
    if "license" in obj and "licence" not in obj:
        obj["licence"] = obj.pop("license")
    md.given = frozenset(k for k in SIDECAR_FIELDS if obj.get(k) is not None)
    for key in SIDECAR_TEXT_FIELDS:
        if key in obj and obj[key] is not None:
            if not isinstance(obj[key], str):
                md.given -= {key}
                md.problems.append(f"'{key}' must be a string (ignored)")
                continue
            setattr(md, key, clean_line(obj[key])[:2000])
    for key in ("entities", "tags"):
        if key in obj and obj[key] is not None:
            val = obj[key]
            if isinstance(val, str):
                val = [val]
            if not isinstance(val, list) or not all(isinstance(v, str) for v in val):
                md.given -= {key}
                md.problems.append(f"'{key}' must be a list of strings (ignored)")
                continue
            setattr(md, key, [c for c in (clean_line(v)[:200] for v in val) if c][:100])
    # Case and surrounding spaces are not doubt ("Safe" is safe); anything else is.
    # A strict key that is present says something about it, even as null: null is doubt too.
    md.given |= {k for k in STRICT_FIELDS if k in obj}
    for key, allowed in (("safety", SAFETY_CLASSES), ("rights", RIGHTS_STATUSES)):
        if key in obj:
            val = obj[key].strip().casefold() if isinstance(obj[key], str) else None
            if val in allowed:
                setattr(md, key, val)
            else:
                md.hold(key, f"'{key}' must be one of {', '.join(allowed)}; held as {HELD[key]}")
    if "private" in obj:
        if isinstance(obj["private"], bool):
            md.private = obj["private"]
        else:
            md.hold("private", "'private' must be true or false; held as true")
    for key, why in doubt.items():
        # Which value was meant is in doubt: the held reading, or a stricter value that was given.
        values = [v.strip().casefold() for v in repeated.get(key, []) if isinstance(v, str)]
        stricter = max((v for v in values if v in SAFETY_CLASSES), key=SAFETY_CLASSES.index, default="safe")
        held = max(HELD[key], stricter, key=SAFETY_CLASSES.index) if key == "safety" else HELD[key]
        if key not in md.doubts:
            md.hold(key, f"{why}; held as {str(held).lower()}")
        setattr(md, key, held)
    return md


def _regular(path: Path, folder: Path) -> str | None:
    """Why `path` may not be read as metadata of `folder` (None: it may). Only a regular file whose
    real location is inside the folder: a FIFO would block the ingest, a device never ends, and a
    symlink out of the folder would copy someone else's file into the library."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"unreadable ({e.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if path.is_symlink():
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return "a symlink that cannot be resolved"
        if real.parent != folder.resolve():
            return "a symlink to a file outside its folder"
    return None


def _read_small(path: Path, limit: int = MAX_SIDECAR_BYTES) -> bytes:
    # O_NONBLOCK: had the file become a FIFO since it was checked, open() would wait forever.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise BadInput("sidecar", f"{show_path(path.name)} is not a regular file")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise BadInput("sidecar", f"{show_path(path.name)} is over {limit:,} bytes")
    return data


@dataclass
class Manifest:
    """A folder's mambo.jsonl: its checksum, every readable line by the file it names (the
    normalised path, as the folder walk gives it), errors, the files a line names in doubt (they
    are held private), and the broken lines that name no file (any image of the folder without a
    line of its own may be the one they describe)."""

    sha: str = ""
    entries: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)
    loose: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # loose(path) -> (line, name given)
    errors: list[BadInput] = field(default_factory=list)
    held: dict[str, str] = field(default_factory=dict)  # path -> why
    blind: list[str] = field(default_factory=list)


def _lexical(folder: Path, rel: str) -> str:
    return os.path.normpath(os.path.join(folder, rel))


def metadata_folders(image: Path, root: Path | None) -> list[Path]:
    """The folders whose manifest may describe `image`: its own and each one above it up to the
    library root (a manifest line may name a file in a subfolder: `sub/x.png`)."""
    out = [image.parent]
    if root is not None and (image.parent == root or root in image.parent.parents):
        out += [p for p in image.parent.parents if p == root or root in p.parents]
    return out


class SidecarFinder:
    """Finds an image's metadata: `NAME.json` and `NAME.png.json` beside it and its lines in the
    `mambo.jsonl` manifests of its folder and the folders above it in the root, merged (see
    Metadata.merged). A manifest line can only describe files inside its folder. A name that
    matches an image only loosely (case, white space, Unicode form) holds that image private."""

    def __init__(self) -> None:
        self._manifests: dict[Path, Manifest] = {}
        self._names: dict[Path, dict[str, list[str]]] = {}

    def _manifest(self, folder: Path) -> Manifest:
        if folder not in self._manifests:
            m = Manifest()
            path = folder / MANIFEST_NAME
            data = b""
            if os.path.lexists(path):
                why = _regular(path, folder)
                try:
                    if why:
                        raise BadInput("sidecar", f"{MANIFEST_NAME} is {why}")
                    data = _read_small(path, MAX_MANIFEST_BYTES)
                except BadInput as e:
                    m.blind.append(clean_line(e.message))
                    if "over" in e.message:
                        e = BadInput(
                            "sidecar",
                            f"{e.message}: split it into the subfolders' manifests or "
                            "NAME.json sidecars; its folder's images are kept private",
                        )
                    m.errors.append(e)
                except OSError as e:
                    m.errors.append(BadInput("sidecar", f"{MANIFEST_NAME}: unreadable ({e.strerror})"))
                    m.blind.append(f"{MANIFEST_NAME} is unreadable")
            m.sha = hashlib.sha256(data).hexdigest()
            # Lines end at \n alone: str.splitlines would also split inside a line at U+2028 and
            # other Unicode line breaks, which JSON strings may hold.
            for n, line in enumerate(data.decode("utf-8-sig", "replace").split("\n"), 1):
                if line.strip():
                    self._manifest_line(m, folder, n, line)
            self._manifests[folder] = m
        return self._manifests[folder]

    @staticmethod
    def _manifest_line(m: Manifest, folder: Path, n: int, line: str) -> None:
        where = f"{MANIFEST_NAME} line {n}"
        try:
            obj = read_json(line)
            rel = obj.get("file") if isinstance(obj, dict) else None
            if not isinstance(rel, str) or not rel:
                raise ValueError("no 'file' key")
            names = [r for r in getattr(obj, "repeated", {}).get("file", [rel]) if isinstance(r, str) and r]
            inside = [_lexical(folder, r) for r in names if folder in Path(_lexical(folder, r)).parents]
            if len(set(names)) > 1:
                # Which file it describes is in doubt: every file it names is held.
                for target in inside:
                    m.held[target] = f"{where} names 'file' {len(names)} times"
                raise ValueError(
                    f"'file' given {len(names)} times ({', '.join(map(repr, names))}); "
                    "the files it names are kept private"
                )
            if not inside:
                raise ValueError(f"'file' {rel!r} points outside the folder")
            target = inside[0]
            try:
                real = Path(target).resolve()
            except (OSError, RuntimeError) as e:  # a symlink loop, a name too long
                raise ValueError(f"'file' {rel!r} cannot be resolved ({clean_line(e)})") from e
            if folder.resolve() not in real.parents:
                # The image is a link to a file elsewhere: its metadata is not read, and it is held.
                m.held[target] = f"{where}: {rel!r} is a symlink to a file outside the folder"
                raise ValueError(f"'file' {rel!r} is a symlink to a file outside the folder; it is kept private")
            m.entries.setdefault(target, []).append((n, obj))
            m.loose.setdefault(loose(target), []).append((n, rel))
        except (ValueError, AttributeError) as e:
            m.errors.append(BadInput("sidecar", f"{where}: {clean_line(e)}"))
            if not any(w in str(e) for w in ("outside the folder", "kept private")):
                m.blind.append(f"{where} cannot be read")
        except RecursionError:
            m.errors.append(BadInput("sidecar", f"{where}: nested too deeply"))
            m.blind.append(f"{where} cannot be read")

    def manifest_errors(self, folder: Path) -> list[BadInput]:
        return self._manifest(folder).errors

    def orphans(self, folder: Path, *, sidecars: bool = True) -> list[tuple[Path, str]]:
        """Metadata in `folder` that names no file: a sidecar whose image is not beside it, a
        manifest line whose file does not exist (an image renamed or moved away from what said it
        was private). (path, what to say) for an ingest warning."""
        out: list[tuple[Path, str]] = []
        if sidecars:
            try:
                names = {e.name for e in os.scandir(folder)}
            except OSError:
                names = set()
            stems = {os.path.splitext(n)[0] for n in names if os.path.splitext(n)[1].lower() in IMAGE_SUFFIXES}
            for name in sorted(names):
                base, ext = os.path.splitext(name)
                if ext.lower() != ".json" or name == MANIFEST_NAME:
                    continue
                if os.path.splitext(base)[1].lower() in IMAGE_SUFFIXES:
                    if base not in names:
                        out.append((folder / name, f"sidecar of {show_path(base)}, which is not in this folder"))
                elif base not in stems:
                    out.append((folder / name, "sidecar of no image in this folder (renamed or moved?)"))
        m = self._manifest(folder)
        for target, lines in sorted(m.entries.items()):
            if not os.path.lexists(target):
                name = show_path(os.path.relpath(target, folder))
                out.append(
                    (
                        folder / MANIFEST_NAME,
                        f"line {lines[0][0]} names {name}, which does not exist (renamed or moved?)",
                    )
                )
        return out

    def _sidecar(self, cand: Path) -> tuple[str, Metadata]:
        """(checksum, metadata) of one sidecar file; held private when it cannot be read."""
        source = f"sidecar:{cand.name}"
        name = show_path(cand.name)
        why = _regular(cand, cand.parent)
        if why:
            return "", held_private(source, f"{name} is {why}")
        try:
            data = _read_small(cand)
        except OSError as e:
            return "", held_private(source, f"{name}: unreadable ({e.strerror})")
        except BadInput as e:
            return "", held_private(source, e.message)
        sha = hashlib.sha256(data).hexdigest()
        try:
            obj = read_json(data.decode("utf-8-sig"))  # a BOM, as Notepad writes it, is not an error
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            return sha, held_private(source, f"{name} is not valid JSON ({clean_line(e)})")
        except RecursionError:  # "[[[[..." a million deep: Python's parser gives up
            return sha, held_private(source, f"{name} is nested too deeply to be metadata")
        md = parse_metadata(obj, source)
        md.problems = [p if p.startswith(name) else f"{name}: {p}" for p in md.problems]
        return sha, md

    def _loose_sidecars(self, image: Path) -> list[Path]:
        """Sidecar files beside `image` whose names match its sidecar names only loosely
        (`img.PNG.json` for `img.png`, an NFD name for an NFC one)."""
        folder = image.parent
        if folder not in self._names:
            names: dict[str, list[str]] = {}
            try:
                for entry in os.scandir(folder):
                    if entry.name.lower().endswith(".json"):
                        names.setdefault(loose(entry.name), []).append(entry.name)
            except OSError:
                pass
            self._names[folder] = names
        exact = {image.with_suffix(".json").name, image.name + ".json"}
        return [folder / n for want in exact for n in self._names[folder].get(loose(want), []) if n not in exact]

    def find(self, image: Path, root: Path | None = None) -> tuple[str, Metadata | None, BadInput | None]:
        """(checksum of the metadata sources, metadata, error). Metadata is None when the image has
        none; the error (one line, naming the file and the fields) may come with metadata. `root`:
        the library root the image is in, whose manifests above the image's folder apply too."""
        found: list[tuple[str, Metadata]] = []
        for cand in dict.fromkeys((image.with_suffix(".json"), image.with_name(image.name + ".json"))):
            if os.path.lexists(cand):
                found.append(self._sidecar(cand))
        for cand in self._loose_sidecars(image):
            sha, md = self._sidecar(cand)
            md.hold(
                "private",
                f"{show_path(cand.name)} is named like {show_path(image.name)}'s sidecar but not "
                f"exactly (name it {show_path(image.name)}.json); the image is kept private",
            )
            found.append((sha, md))
        key = os.path.normpath(image)
        blind: list[str] = []
        described = False
        for folder in metadata_folders(image, root):
            m = self._manifest(folder)
            for n, obj in m.entries.get(key, []):
                line_sha = hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()
                md = parse_metadata(obj, f"manifest:{MANIFEST_NAME}:{n}")
                md.problems = [f"{MANIFEST_NAME} line {n}: {p}" for p in md.problems]
                found.append((line_sha, md))
                described = True
            for n, rel in m.loose.get(loose(key), []):
                if key not in m.entries:
                    found.append(
                        (
                            m.sha,
                            held_private(
                                f"manifest:{MANIFEST_NAME}:{n}",
                                f"{MANIFEST_NAME} line {n} names {rel!r}, which matches {show_path(image.name)} "
                                "only by case, spaces or Unicode form (write the name exactly)",
                            ),
                        )
                    )
                    described = True
            if key in m.held:
                found.append((m.sha, held_private(f"manifest:{MANIFEST_NAME}", m.held[key])))
                described = True
            blind += m.blind
        if not described and blind:
            # A manifest line that cannot be read may be this image's: it may have said private.
            found.append(
                (
                    hashlib.sha256("|".join(blind).encode()).hexdigest(),
                    held_private(f"manifest:{MANIFEST_NAME}", f"{'; '.join(blind[:3])} and may describe this image"),
                )
            )
        if not found:
            return "", None, None
        sha, meta = found[0]
        for _other_sha, other in found[1:]:
            differ = meta.disagrees(other)
            meta = meta.merged(other)
            if differ:
                meta.problems.append(
                    f"described twice ({meta.source}) with different {', '.join(differ)}; "
                    "the stricter safety, rights and privacy hold"
                )
        if len(found) > 1:
            sha = hashlib.sha256("|".join(s for s, _ in found).encode()).hexdigest()
        err = BadInput("sidecar", "; ".join(dict.fromkeys(meta.problems))) if meta.problems else None
        return sha, meta, err


class NoSidecars(SidecarFinder):
    """`mambo add --no-sidecars`: ingest a folder bare, as a real downloads folder is (sidecars and
    manifests are not read), so a library can be compared with and without its metadata."""

    def manifest_errors(self, folder: Path) -> list[BadInput]:
        return []

    def orphans(self, folder: Path, *, sidecars: bool = True) -> list[tuple[Path, str]]:
        return []

    def find(self, image: Path, root: Path | None = None) -> tuple[str, Metadata | None, BadInput | None]:
        return "", None, None
