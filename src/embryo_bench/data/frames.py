"""What a frame file must be: a PNG image (whatever its extension says), ``frame_size`` px
square, 8-bit gray. Checked when a source is indexed (header only,
:func:`embryo_bench.data.sources.check_frame_header`) and when the crop stage decodes the pixels
(:func:`embryo_bench.data.preprocess.read_frame`), so a frame replaced after indexing is checked
again."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from ..errors import DataError


def check_image(path: str | Path, image: Image.Image, frame_size: int) -> None:
    """Check an opened image (its header: format, size, mode) against what a frame must be.

    Args:
        path: the file, for the message. image: the image Pillow opened from it.
        frame_size: expected width and height (px; 480 in the database).

    Raises:
        DataError: naming the file: another format than PNG (a JPEG renamed ``.png``),
            another size than ``frame_size`` square, or a mode other than ``L``.
    """
    if image.format != "PNG":
        suffix = Path(path).suffix
        named = f"named {suffix}" if suffix else "without an extension"
        raise DataError(
            f"{path}: a {image.format or 'unknown-format'} image {named}; expected PNG "
            "(convert it to PNG, or remove it)"
        )
    if image.size != (frame_size, frame_size):
        raise DataError(
            f"{path}: frame is {image.size[0]}x{image.size[1]} px; expected "
            f"{frame_size}x{frame_size} (setting frame_size)"
        )
    if image.mode != "L":
        raise DataError(f"{path}: image mode {image.mode!r}; expected 8-bit grayscale ('L')")
