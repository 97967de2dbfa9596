"""The paper's preprocessing (section 3, figure 1), one function per stage.

crop: centre 320x320 of a 480x480 frame (the same 2/3 fraction for other sizes);
invert: histogram equalisation, then shadow inversion p -> |p - 128|;
augment: rotations in 18 degree steps (20 per frame), bilinear, fill 0, then downsizing to
64x64 with antialiasing.

Histogram equalisation is OpenCV's ``equalizeHist`` (the paper names no method; see
:func:`equalize`). Downsizing is Pillow's antialiasing Lanczos resize, bit for bit. Rotation is
Pillow's bilinear rotation (``Image.rotate``: its matrix, its edge handling, fill 0, values
truncated to integers) evaluated by OpenCV's ``warpAffine`` in float32 where Pillow uses
float64: within 1 grey level of Pillow's at about 0.02 % of the rotated pixels, equal at the
rest (:func:`rotate`; :func:`rotate_pillow` is Pillow's). Where the installed OpenCV does not
reproduce Pillow so (OpenCV 4's float warp rounds coordinates to 1/32 px), Pillow rotates.

The augment stage (:func:`rotate_resize_many`) gives, sample for sample, ``resize(rotate())``
of every frame at every angle, but works on 4 frames at once (the 4 channels of one image)
and shares work between angles 90 degrees apart (quarter turns are exact): the paper's 20
angles take 4 warps and 10 resizes per 4 frames instead of 80 rotations and 80 resizes.
"""

from __future__ import annotations

import functools
import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import ConfigError, DataError
from .frames import check_image


def read_frame(path: str, frame_size: int) -> np.ndarray:
    """Decode a frame into a uint8 array of shape (frame_size, frame_size).

    Raises:
        DataError: missing, corrupt or truncated PNG, another format (a JPEG named .png),
            wrong size, or not 8-bit grayscale (:func:`embryo_bench.data.frames.check_image`).
    """
    try:
        with Image.open(path) as im:
            check_image(path, im, frame_size)
            im.load()
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
    (bilinear, corners filled with 0); returns uint8 (H, W).

    Pillow's rotation (:func:`rotate_pillow`) evaluated in float32 by OpenCV where Pillow uses
    float64 (module docstring): at most 1 grey level from Pillow's, at about 0.02 % of the
    pixels. Multiples of 90 degrees (of a square image) are exact, as in Pillow.
    """
    return _rotate_planes(_to_planes(image[None]), np.array([angle]))[0, :, :, 0].copy()


def rotate_pillow(image: np.ndarray, angle: float) -> np.ndarray:
    """:func:`rotate` by Pillow's ``Image.rotate`` (bilinear, fill 0), the reference: uint8
    (H, W) -> uint8 (H, W)."""
    im = Image.fromarray(image, mode="L")
    return np.asarray(im.rotate(float(angle), resample=Image.Resampling.BILINEAR, fillcolor=0))


def resize(image: np.ndarray, size: int) -> np.ndarray:
    """Resize a uint8 array (H, W) to (size, size) with Pillow's antialiasing Lanczos filter
    (paper: 64 px)."""
    im = Image.fromarray(image, mode="L")
    return np.asarray(im.resize((size, size), Image.Resampling.LANCZOS))


def resize_many(images: np.ndarray, size: int) -> np.ndarray:
    """:func:`resize` of each image, bit for bit, about twice as fast (:func:`_resize_planes`).

    Args:
        images: uint8 array (N, H, W).
        size: output side in px.

    Returns:
        uint8 array (N, size, size).
    """
    n = len(images)
    planes = np.stack([_to_planes(images[i : i + PLANES]) for i in range(0, n, PLANES)])
    small = _resize_planes(planes, size)  # (ceil(N / 4), size, size, 4)
    return np.ascontiguousarray(small.transpose(0, 3, 1, 2)).reshape(-1, size, size)[:n]


#: Images processed together, as the 4 channels (planes) of one image.
PLANES = 4


def _to_planes(images: np.ndarray) -> np.ndarray:
    """Up to :data:`PLANES` uint8 images (N, H, W) as the channels of one uint8 image
    (H, W, 4), missing ones 0."""
    n, h, w = images.shape
    planes = np.zeros((h, w, PLANES), np.uint8)
    planes[:, :, :n] = images.transpose(1, 2, 0)
    return planes


def _as_pixels(planes: np.ndarray) -> np.ndarray:
    """(..., 4) uint8 planes as one uint32 per pixel (a view): moving pixels moves all 4."""
    return planes.view(np.uint32)[..., 0]


def _resize_planes(planes: np.ndarray, size: int) -> np.ndarray:
    """:func:`resize` of every plane of uint8 (N, H, W, 4) -> uint8 (N, size, size, 4), bit for
    bit, in two Pillow calls.

    Pillow resizes each row on its own, then each column of that, with the same integer
    arithmetic for every band of a 4-band image (mode CMYK: no alpha, so no premultiplying)
    as for one 8-bit band, at about half the cost per band. So the first pass of every image
    is one horizontal resize of the images stacked vertically, and the second one of their
    transposes, stacked likewise."""
    n, h, w, _ = planes.shape
    lanczos = Image.Resampling.LANCZOS

    def rows(pixels: np.ndarray) -> np.ndarray:  # uint32 (N, H', W') -> uint32 (N, H', size)
        m, rh, rw = pixels.shape
        tall = Image.frombuffer("CMYK", (rw, m * rh), pixels, "raw", "CMYK", 0, 1)
        out = np.asarray(tall.resize((size, m * rh), lanczos))
        return _as_pixels(out).reshape(m, rh, size)

    across = rows(np.ascontiguousarray(_as_pixels(planes)))
    down = rows(np.ascontiguousarray(across.transpose(0, 2, 1)))
    return np.ascontiguousarray(down.transpose(0, 2, 1)).view(np.uint8).reshape(n, size, size, 4)


def _lanczos(x: float) -> float:
    """Pillow's Lanczos kernel (Resample.c ``lanczos_filter``), in the same float64 steps."""
    if not -3.0 <= x < 3.0:
        return 0.0
    a, b = x * math.pi, x / 3 * math.pi
    return (1.0 if x == 0.0 else math.sin(a) / a) * (1.0 if x / 3 == 0.0 else math.sin(b) / b)


@functools.lru_cache(maxsize=16)
def lanczos_weights(in_size: int, out_size: int) -> np.ndarray:
    """The integer weights Pillow's Lanczos resize of ``in_size`` px to ``out_size`` px applies
    to each row (and column) of an 8-bit image, computed in the float64 steps of its
    Resample.c (``precompute_coeffs``, ``normalize_coeffs_8bpc``): int64 (out_size, in_size);
    output pixel x is ``clip((sum(w[x] * row) + 2**21) >> 22, 0, 255)``."""
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support, ss = 3.0 * filterscale, 1.0 / filterscale
    weights = np.zeros((out_size, in_size), np.int64)
    for xx in range(out_size):
        center = 0.0 + (xx + 0.5) * scale
        xmin = max(int(center - support + 0.5), 0)
        xmax = min(int(center + support + 0.5), in_size) - xmin
        k = [_lanczos((x + xmin - center + 0.5) * ss) for x in range(xmax)]
        ww = 0.0
        for v in k:
            ww += v
        k = [v / ww for v in k] if ww != 0.0 else k
        weights[xx, xmin : xmin + xmax] = [int((-0.5 if v < 0 else 0.5) + v * 2**22) for v in k]
    weights.flags.writeable = False
    return weights


def _mirror_symmetric(in_size: int, out_size: int) -> bool:
    """Whether Pillow's Lanczos resize of ``in_size`` to ``out_size`` px commutes with
    mirroring (its weight table is symmetric: output x weighs input i as output
    ``out_size - 1 - x`` weighs ``in_size - 1 - i``); true for every size tried (8-399 px to
    16-96 px), as the kernel is even and the windows mirror, but checked, not assumed."""
    weights = lanczos_weights(in_size, out_size)
    return bool((weights == weights[::-1, ::-1]).all())


def _pillow_matrix(angle: float, width: int, height: int) -> tuple[float, ...]:
    """The inverse affine matrix (a, b, c, d, e, f) of Pillow's ``Image.rotate(angle)`` about
    the centre, computed as Pillow computes it: output pixel (x, y) is sampled at
    (a*x' + b*y' + c, d*x' + e*y' + f), x' = x + 0.5, y' = y + 0.5, in coordinates where
    pixel centres lie at +0.5."""
    cx, cy = width / 2, height / 2
    rad = -math.radians(angle % 360.0)
    a, b = round(math.cos(rad), 15), round(math.sin(rad), 15)
    d, e = round(-math.sin(rad), 15), round(math.cos(rad), 15)
    return a, b, a * -cx + b * -cy + 0.0 + cx, d, e, d * -cx + e * -cy + 0.0 + cy


def _quarter_turns(angle: float, height: int, width: int) -> int | None:
    """Counter-clockwise quarter turns for the angles Pillow rotates by transposing (0, 180,
    and 90, 270 of a square image), else None."""
    angle = angle % 360.0
    if angle in (0, 180) or (angle in (90, 270) and height == width):
        return int(angle) // 90
    return None


@functools.lru_cache(maxsize=64)
def _warp(angle: float, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV's form of Pillow's rotation: the 2x3 matrix (output pixel index -> input pixel
    index, pixel centres at integers) and a uint32 (H, W) mask, all ones where Pillow samples
    the input and 0 where it fills (input coordinates outside [0, W) x [0, H), evaluated in
    float64 exactly as Pillow evaluates them)."""
    a, b, c, d, e, f = _pillow_matrix(angle, width, height)
    matrix = np.array([[a, b, a * 0.5 + b * 0.5 + c - 0.5], [d, e, d * 0.5 + e * 0.5 + f - 0.5]])
    ys, xs = np.mgrid[:height, :width] + 0.5
    xin, yin = a * xs + b * ys + c, d * xs + e * ys + f
    inside = (xin >= 0) & (xin < width) & (yin >= 0) & (yin < height)
    keep = np.where(inside, np.uint32(0xFFFFFFFF), np.uint32(0))
    matrix.flags.writeable = keep.flags.writeable = False
    return matrix, keep


def _rotate_opencv(planes: np.ndarray, angles: list[float]) -> np.ndarray:
    """Rotate the 4 planes of uint8 (H, W, 4) by each angle as :func:`rotate` does, with one
    ``cv2.warpAffine`` per angle of them as a 4-channel float32 image (OpenCV's float bilinear
    path is for 1, 3 or 4 channels; other counts take a fixed-point one). Returns uint8
    (len(angles), H, W, 4)."""
    import cv2

    h, w, _ = planes.shape
    src = planes.astype(np.float32)
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    out = np.empty((len(angles), h, w, PLANES), np.uint8)
    for i, angle in enumerate(angles):
        matrix, keep = _warp(float(angle), h, w)
        warped = cv2.warpAffine(src, matrix, (w, h), flags=flags, borderMode=cv2.BORDER_REPLICATE)
        # Pillow truncates the interpolated value (never negative: a convex mix of pixels).
        np.copyto(out[i], warped, casting="unsafe")
        np.bitwise_and(_as_pixels(out[i]), keep, out=_as_pixels(out[i]))
    return out


@functools.cache
def _opencv_rotates_like_pillow() -> bool:
    """Whether this OpenCV reproduces Pillow's rotation as :func:`rotate` documents: on a
    noise probe (every grey level, sharp edges), at most 1 grey level apart at under 1 % of
    the pixels (OpenCV 5: about 0.02 %; OpenCV 4's fixed-point warp: a quarter of them, up to
    3 apart). False, or no OpenCV: Pillow rotates."""
    try:
        import cv2  # noqa: F401
    except ImportError:
        return False
    probe = np.random.default_rng(0).integers(0, 256, (PLANES, 64, 64), dtype=np.uint8)
    angles = [18.0, 231.0]
    ours = _rotate_opencv(_to_planes(probe), angles).transpose(0, 3, 1, 2).astype(np.int16)
    pillow = np.array([[rotate_pillow(img, a) for img in probe] for a in angles])
    diff = np.abs(ours - pillow)
    return bool(diff.max() <= 1 and (diff > 0).mean() < 0.01)


def _rotate_planes(planes: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """:func:`rotate` of the 4 planes of uint8 (H, W, 4) by each angle; returns uint8
    (len(angles), H, W, 4).

    OpenCV warps only the angles modulo 90 degrees (square images; 180 otherwise): a rotation
    by t + 90 k is the rotation by t turned by k exact quarter turns, which is what Pillow's
    results are too, pixel for pixel (its matrices for t and t + 90 k are the same up to
    rounding far below what moves a value). Paper: 4 warps for 20 angles."""
    h, w, _ = planes.shape
    out = np.empty((len(angles), h, w, PLANES), np.uint8)
    general = []
    for i, angle in enumerate(angles):
        turns = _quarter_turns(float(angle), h, w)
        if turns is None:
            general.append(i)
        else:
            _as_pixels(out[i])[:] = np.rot90(_as_pixels(planes), turns)
    if general and _opencv_rotates_like_pillow():
        period = 90.0 if h == w else 180.0
        turns_of: dict[float, list[tuple[int, int]]] = {}
        for i in general:
            turns, base = divmod(float(angles[i]) % 360.0, period)
            turns_of.setdefault(base, []).append((i, int(turns * period) // 90))
        for base, rotated in zip(turns_of, _rotate_opencv(planes, list(turns_of)), strict=True):
            for i, turns in turns_of[base]:
                _as_pixels(out[i])[:] = np.rot90(_as_pixels(rotated), turns)
    elif general:
        for i in general:
            for c in range(PLANES):
                out[i, :, :, c] = rotate_pillow(np.ascontiguousarray(planes[:, :, c]), angles[i])
    return out


def _rotate_resize_planes(planes: np.ndarray, angles: np.ndarray, size: int) -> np.ndarray:
    """``resize(rotate(plane, angle), size)`` of the 4 planes of uint8 (H, W, 4) at each angle,
    bit for bit as :func:`rotate` and :func:`resize` give it; returns uint8
    (len(angles), size, size, 4).

    With a square image (and OpenCV rotating), rotations by t + 90 k are quarter turns of the
    rotation by t (:func:`_rotate_planes`), and Pillow's resize commutes with mirroring
    (:func:`_mirror_symmetric`), so resizing a rotation turned by 180 degrees gives the
    resized rotation turned by 180, and one turned by 90 or 270 gives the turned transpose of
    the resized transpose (Pillow resizes rows first: the transposed order). Paper: 10
    resizes for 20 angles."""
    h, w, _ = planes.shape
    if h != w or not _opencv_rotates_like_pillow() or not _mirror_symmetric(h, size):
        return _resize_planes(_rotate_planes(planes, angles), size)
    turns_of: dict[float, list[tuple[int, int]]] = {}
    for i, angle in enumerate(angles):
        turns, base = divmod(float(angle) % 360.0, 90.0)
        turns_of.setdefault(base, []).append((i, int(turns)))
    warps = [base for base in turns_of if base]
    warped = dict(zip(warps, _rotate_opencv(planes, warps) if warps else [], strict=True))
    rotated = {base: warped.get(base, planes) for base in turns_of}
    # The resizes each base needs: rows first (even turns), columns first (odd turns).
    rows_first = [b for b, ts in turns_of.items() if any(k % 2 == 0 for _, k in ts)]
    cols_first = [b for b, ts in turns_of.items() if any(k % 2 for _, k in ts)]
    small = {}
    if rows_first:
        resized = _resize_planes(np.stack([rotated[b] for b in rows_first]), size)
        small.update({(b, 0): _as_pixels(r) for b, r in zip(rows_first, resized, strict=True)})
    if cols_first:
        transposed = np.stack([_as_pixels(rotated[b]).T for b in cols_first])
        resized = _resize_planes(transposed[..., None].view(np.uint8), size)
        small.update({(b, 1): _as_pixels(r).T for b, r in zip(cols_first, resized, strict=True)})
    out = np.empty((len(angles), size, size, PLANES), np.uint8)
    for base, turns in turns_of.items():
        for i, k in turns:
            _as_pixels(out[i])[:] = np.rot90(small[base, k % 2], k)
    return out


def rotate_resize(image: np.ndarray, angles: np.ndarray, size: int) -> np.ndarray:
    """Each rotation of ``image`` (:func:`rotate`), resized (:func:`resize`): the augment
    stage for one image (:func:`rotate_resize_many`).

    Args:
        image: uint8 array (H, H).
        angles: degrees, shape (R,).
        size: output side in px (paper: 64).

    Returns:
        uint8 array (R, size, size).
    """
    return rotate_resize_many(image[None], angles, size)


def rotate_resize_many(
    images: np.ndarray, angles: np.ndarray, size: int, threads: int = 1
) -> np.ndarray:
    """:func:`rotate_resize` of every image: the augment stage. The result is, sample for
    sample, ``resize(rotate(image, angle), size)``; images go 4 at a time as the planes of
    one image (:func:`_rotate_resize_planes`), and ``threads`` workers take such groups
    (OpenCV and Pillow release the GIL). The result does not depend on ``threads``.

    Args:
        images: uint8 array (N, H, H).
        angles: degrees, shape (R,).
        size: output side in px (paper: 64).
        threads: worker threads (1: this thread only).

    Returns:
        uint8 array (N*R, size, size), frame-major: rows ``i*R .. i*R+R-1`` are image i's R
        rotations in angle order.
    """
    n, r = len(images), len(angles)
    out = np.empty((n, r, size, size), np.uint8)

    def work(start: int) -> None:
        group = images[start : start + PLANES]
        small = _rotate_resize_planes(_to_planes(group), angles, size)
        out[start : start + len(group)] = small.transpose(3, 0, 1, 2)[: len(group)]

    starts = range(0, n, PLANES)
    if threads > 1 and len(starts) > 1:
        with ThreadPoolExecutor(min(threads, len(starts))) as pool:
            list(pool.map(work, starts))
    else:
        for start in starts:
            work(start)
    return out.reshape(n * r, size, size)


def default_threads() -> int:
    """Worker threads for a job: ``$OMP_NUM_THREADS`` where set to a positive integer
    (Snakemake sets it to the job's ``threads``), else the CPUs this process may run on."""
    try:
        return max(1, int(os.environ["OMP_NUM_THREADS"]))
    except (KeyError, ValueError):
        return len(os.sched_getaffinity(0))


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
