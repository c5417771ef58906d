"""Images as a vision transformer's input: a hashable image value and its preprocessing.

Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words" (ViT): the image is resized to the
checkpoint's size, each channel scaled and normalised,

    x = (pixel / 255 - mean_c) / std_c                       per channel c

then cut into P x P patches that become the tokens. The steps and their order are those of the
checkpoint's image-processor config (preprocessor_config.json; ViTImageProcessor's defaults,
224 x 224, mean = std = 0.5, bilinear resizing, when the folder has none); the tests check them
against transformers' own (PIL) image processor.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MAX_SIDE = 4096  # larger images are refused (a typed-in or uploaded image on a shared server)


@dataclass(frozen=True, eq=False)
class ImageInput:
    """An RGB image, H x W x 3 uint8, read-only; equal (and hashed) by its content digest, so
    a TraceRequest holding it is a cache key."""

    array: np.ndarray = field(repr=False)  # [H, W, 3] uint8
    digest: str = ""  # sha256 of shape + bytes

    @classmethod
    def of(cls, image) -> ImageInput:
        """From an ImageInput, a PIL image (any mode, converted to RGB) or an [H, W, 3] uint8
        array (an [H, W] grey array is repeated over the three channels)."""
        if isinstance(image, ImageInput):
            return image
        if hasattr(image, "convert") and hasattr(image, "size"):  # a PIL image
            image = np.asarray(image.convert("RGB"))
        if not isinstance(image, np.ndarray):
            raise ValueError("an image must be an RGB array (H x W x 3, uint8) or a PIL image")
        if image.dtype != np.uint8:
            raise ValueError(f"an image array must be uint8 (0..255); got {image.dtype}")
        if image.ndim == 2:
            image = np.repeat(image[:, :, None], 3, axis=2)
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"an image array must be H x W x 3 (RGB); got shape {image.shape}")
        h, w = image.shape[:2]
        if not (1 <= h <= MAX_SIDE and 1 <= w <= MAX_SIDE):
            raise ValueError(f"an image must be 1 to {MAX_SIDE} pixels on each side; got {h} x {w}")
        arr = np.ascontiguousarray(image).copy()
        arr.flags.writeable = False
        digest = hashlib.sha256(repr(arr.shape).encode() + arr.tobytes()).hexdigest()
        return cls(arr, digest)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    def __eq__(self, other) -> bool:
        return isinstance(other, ImageInput) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"ImageInput({self.shape[0]}x{self.shape[1]}, sha256={self.digest[:12]})"

    def as_dict(self) -> dict:
        return {"height": int(self.shape[0]), "width": int(self.shape[1]),
                "sha256": self.digest}


@dataclass(frozen=True)
class ImageProcessing:
    """What preprocessor_config.json says (ViTImageProcessor's defaults for what it omits)."""

    height: int = 224
    width: int = 224
    resample: int = 2  # PIL's BILINEAR
    do_resize: bool = True
    do_rescale: bool = True
    rescale_factor: float = 1 / 255
    do_normalize: bool = True
    image_mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    image_std: tuple[float, float, float] = (0.5, 0.5, 0.5)

    @classmethod
    def from_folder(cls, folder: Path, image_size: int) -> ImageProcessing:
        """Read the folder's preprocessor_config.json; without one, ViT's defaults at the
        model's own image size."""
        path = Path(folder) / "preprocessor_config.json"
        if not path.is_file():
            return cls(height=image_size, width=image_size)
        try:
            cfg = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"preprocessor_config.json cannot be read: {e}") from e
        if not isinstance(cfg, dict):
            raise ValueError("preprocessor_config.json is not a JSON object")
        if cfg.get("do_center_crop") or cfg.get("do_pad"):
            raise ValueError("image processors that crop or pad are not supported "
                             "(only resize, rescale and normalise, as ViT's)")
        size = cfg.get("size", {"height": image_size, "width": image_size})
        if isinstance(size, int):
            size = {"height": size, "width": size}
        if not (isinstance(size, dict) and "height" in size and "width" in size):
            raise ValueError(f"image size {size!r} is not supported (need height and width)")
        d = cls()

        def triple(name: str) -> tuple[float, float, float]:
            v = cfg.get(name, getattr(d, name))
            v = [v] * 3 if isinstance(v, (int, float)) else list(v)
            if len(v) != 3:
                raise ValueError(f"{name} must have 3 values (RGB)")
            return tuple(float(x) for x in v)

        return cls(
            height=int(size["height"]), width=int(size["width"]),
            resample=int(cfg.get("resample", d.resample)),
            do_resize=bool(cfg.get("do_resize", True)),
            do_rescale=bool(cfg.get("do_rescale", True)),
            rescale_factor=float(cfg.get("rescale_factor", d.rescale_factor)),
            do_normalize=bool(cfg.get("do_normalize", True)),
            image_mean=triple("image_mean"), image_std=triple("image_std"),
        )

    def resized(self, image: ImageInput) -> np.ndarray:
        """The image at the model's size, [height, width, 3] uint8 (what the model sees)."""
        arr = image.array
        if not self.do_resize or arr.shape[:2] == (self.height, self.width):
            return arr
        from PIL import Image

        out = Image.fromarray(arr).resize((self.width, self.height), resample=self.resample)
        return np.asarray(out)

    def pixels(self, image: ImageInput) -> np.ndarray:
        """Model input [3, height, width] float32: resized, x * rescale_factor (computed in
        float64, as transformers does), then (x - mean_c) / std_c in float32."""
        x = self.resized(image)
        if self.do_resize is False and x.shape[:2] != (self.height, self.width):
            raise ValueError(f"this model needs {self.height} x {self.width} images; got "
                             f"{x.shape[0]} x {x.shape[1]} and its processor does not resize")
        x = x.transpose(2, 0, 1)  # [3, H, W]
        if self.do_rescale:
            x = (x.astype(np.float64) * self.rescale_factor).astype(np.float32)
        else:
            x = x.astype(np.float32)
        if self.do_normalize:
            mean = np.asarray(self.image_mean, dtype=np.float32)[:, None, None]
            std = np.asarray(self.image_std, dtype=np.float32)[:, None, None]
            x = (x - mean) / std
        return np.ascontiguousarray(x, dtype=np.float32)


def demo_image() -> np.ndarray:
    """The image shipped with attnviz (assets/image.png) as [H, W, 3] uint8, or a drawn one
    when the assets folder is not there (an installed package)."""
    path = Path(__file__).resolve().parents[2] / "assets" / "image.png"
    if path.is_file():
        from PIL import Image

        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"))
    y, x = np.mgrid[0:224, 0:224]
    img = np.zeros((224, 224, 3), dtype=np.uint8)
    img[..., 0] = (x * 255 // 223).astype(np.uint8)
    img[..., 1] = (y * 255 // 223).astype(np.uint8)
    img[((x - 112) ** 2 + (y - 112) ** 2) < 60 ** 2] = (250, 250, 250)
    return img
