"""The paper's preprocessing (section 3, figure 1), one function per stage.

crop: centre 320x320 of a 480x480 frame (the same 2/3 fraction for other sizes);
invert: histogram equalisation, then shadow inversion p -> |p - 128|;
augment: rotations in 18 degree steps (20 per frame), bilinear, fill 0, then downsizing to
64x64 with antialiasing. Image operations use Pillow, except histogram equalisation, which
uses OpenCV's ``equalizeHist`` (the paper names no method; see :func:`equalize`).
"""

from __future__ import annotations

import numpy as np
from PIL import Image, UnidentifiedImageError

from .errors import ConfigError, DataError


def read_frame(path: str, frame_size: int) -> np.ndarray:
    """Decode a frame into a uint8 array of shape (frame_size, frame_size).

    Raises:
        DataError: missing, corrupt or truncated PNG, wrong size, or not 8-bit grayscale.
    """
    try:
        with Image.open(path) as im:
            im.load()
            if im.mode != "L":
                raise DataError(f"{path}: image mode {im.mode!r}; expected 8-bit grayscale ('L')")
            if im.size != (frame_size, frame_size):
                raise DataError(
                    f"{path}: frame is {im.size[0]}x{im.size[1]} px; expected "
                    f"{frame_size}x{frame_size} (setting frame_size)"
                )
            return np.asarray(im, dtype=np.uint8).copy()
    except FileNotFoundError as exc:
        raise DataError(f"{path}: frame not found") from exc
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise DataError(f"{path}: corrupt or truncated PNG ({exc})") from exc


def crop_box(frame_size: int, fraction: float) -> tuple[int, int, int, int]:
    """Centre crop box (left, top, right, bottom) in px, Pillow convention (right exclusive).

    The side is ``round(frame_size * fraction)``; paper: 480 px, 2/3 -> (80, 80, 400, 400).

    Raises:
        ConfigError: the fraction gives an empty crop or exceeds the frame.
    """
    side = round(frame_size * fraction)
    if not 0 < side <= frame_size:
        raise ConfigError(f"crop fraction {fraction} gives a {side} px crop of {frame_size} px")
    off = (frame_size - side) // 2
    return off, off, off + side, off + side


def centre_crop(frame: np.ndarray, fraction: float) -> np.ndarray:
    """Crop the centre of a square uint8 frame (H, H) to (S, S), S = round(H * fraction)
    (paper: 480 -> 320).

    Raises:
        ConfigError: the fraction gives an empty crop or exceeds the frame.
    """
    left, top, right, bottom = crop_box(frame.shape[0], fraction)
    return frame[top:bottom, left:right]


def equalize(image: np.ndarray) -> np.ndarray:
    """Histogram equalisation by the standard CDF mapping, OpenCV's ``cv2.equalizeHist``:
    with ``h`` the histogram, ``N`` the pixel count and ``m`` the darkest grey level present,
    ``lut[v] = round((cdf[v] - h[m]) * 255 / (N - h[m]))``, so the darkest level maps to 0 and
    the brightest to 255 at any image size (a constant image is left as it is).

    The paper says "histogram equalisation" without naming a method; this is the project's
    choice. Pillow's ``ImageOps.equalize`` (used before) divides by a step of
    ``(N - h[255]) // 255`` pixels, which is 1 on small crops (the 28 px subset's 19 x 19):
    the mapping then saturates and 28 % of all pixels ended at one value.

    Args:
        image: uint8 array (H, W).

    Returns:
        uint8 array (H, W).

    Raises:
        ValueError: ``image`` is not a 2-D uint8 array.
    """
    import cv2  # host-side preprocessing only; the training containers do not need it

    if image.dtype != np.uint8 or image.ndim != 2:
        raise ValueError(f"equalize: expected a 2-D uint8 array, got {image.dtype} {image.shape}")
    return cv2.equalizeHist(np.ascontiguousarray(image))


def invert(image: np.ndarray, centre: int = 128) -> np.ndarray:
    """Shadow inversion p -> |p - centre| of a uint8 array (H, W) (paper: centre 128).

    Returns:
        uint8 array (H, W) with values in [0, max(centre, 255 - centre)].
    """
    return np.abs(image.astype(np.int16) - centre).astype(np.uint8)


def equalize_invert(image: np.ndarray, centre: int = 128) -> np.ndarray:
    """Histogram-equalise then invert shadows (:func:`equalize`, :func:`invert`): the invert
    stage.

    Args:
        image: uint8 array (H, W).
        centre: the grey level that maps to 0 (paper: 128).

    Returns:
        uint8 array (H, W) with values in [0, max(centre, 255 - centre)].
    """
    return invert(equalize(image), centre)


def rotation_angles(step: float) -> np.ndarray:
    """Angles in degrees 0, step, 2*step, ... below 360 (paper: 18 -> 20 angles).

    Raises:
        ConfigError: step outside (0, 360].
    """
    if not 0 < step <= 360:
        raise ConfigError(f"rotation_step {step}: expected degrees in (0, 360]")
    return np.arange(int(np.floor(360.0 / step + 1e-9))) * float(step)


def rotate(image: np.ndarray, angle: float) -> np.ndarray:
    """Rotate a uint8 array (H, W) counter-clockwise about its centre by ``angle`` degrees
    (bilinear, corners filled with 0); returns uint8 (H, W)."""
    im = Image.fromarray(image, mode="L")
    return np.asarray(im.rotate(float(angle), resample=Image.Resampling.BILINEAR, fillcolor=0))


def resize(image: np.ndarray, size: int) -> np.ndarray:
    """Resize a uint8 array (H, W) to (size, size) with Pillow's antialiasing Lanczos filter
    (paper: 64 px)."""
    im = Image.fromarray(image, mode="L")
    return np.asarray(im.resize((size, size), Image.Resampling.LANCZOS))


def rotate_resize(image: np.ndarray, angles: np.ndarray, size: int) -> np.ndarray:
    """Each rotation of ``image`` (:func:`rotate`), resized (:func:`resize`): the augment
    stage.

    Args:
        image: uint8 array (H, H).
        angles: degrees, shape (R,).
        size: output side in px (paper: 64).

    Returns:
        uint8 array (R, size, size).
    """
    out = np.empty((len(angles), size, size), dtype=np.uint8)
    for i, angle in enumerate(angles):
        out[i] = resize(rotate(image, angle), size)
    return out


def preprocess_frame(
    frame: np.ndarray, fraction: float, centre: int, angles: np.ndarray, size: int
) -> np.ndarray:
    """The whole chain for one frame: crop -> equalise + invert -> rotations -> resize.

    Args:
        frame: uint8 array (H, H).
        fraction: centre-crop fraction (paper: 2/3).
        centre: inversion centre (paper: 128).
        angles: rotation angles in degrees, shape (R,).
        size: output side in px (paper: 64).

    Returns:
        uint8 array (R, size, size).

    Raises:
        ConfigError: impossible crop fraction.
    """
    return rotate_resize(equalize_invert(centre_crop(frame, fraction), centre), angles, size)
