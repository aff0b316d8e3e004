"""TensorBoard event payloads of encoded media: audio as the legacy ``Summary.Audio``
value the peers write (TensorBoard's loader turns it into the audio plugin's blob
sequence of [WAV, label], keeping the sample rate in the event for other readers); an
already encoded image (PNG or GIF) as the legacy ``Summary.Image`` the peers write, or in
the images plugin's blob sequence form TF2 writes."""

from __future__ import annotations

from ..pb import message_class
from .tensorboard import TensorBoardEncoder, value_event

__all__ = ["audio_payload", "encoded_image_payload", "legacy_image_payload"]

_ENCODER = TensorBoardEncoder()  # stateless: only its payload builders are used
# by name: the pure-Python protobuf runtime does not attach nested classes to their parents
_AUDIO = message_class("summarylog.tb.Summary.Audio")
_IMAGE = message_class("summarylog.tb.Summary.Image")


def audio_payload(wall_time: float, step: int, tag: str, wav: bytes, sample_rate: float,
                  channels: int, frames: int) -> bytes:
    """An event with one WAV audio value, as torch.utils.tensorboard writes it."""
    return value_event(wall_time, step, tag=tag, audio=_AUDIO(
        sample_rate=sample_rate, num_channels=channels, length_frames=frames,
        encoded_audio_string=wav, content_type="audio/wav"))


def encoded_image_payload(wall_time: float, step: int, tag: str, data: bytes, height: int,
                          width: int, channels: int) -> bytes:
    """An images event of one encoded picture (PNG, or an animated GIF)."""
    return _ENCODER.images(wall_time, step, tag, [data], height, width, channels)


def legacy_image_payload(wall_time: float, step: int, tag: str, data: bytes, height: int,
                         width: int, channels: int) -> bytes:
    """An event with one encoded picture (PNG, or an animated GIF) as torch's and
    tensorboardX's writers make it: ``Summary.Image``, colorspace = channels, no metadata
    (tbparse and EventAccumulator file these as images, plugin tensors as tensors)."""
    return value_event(wall_time, step, tag=tag, image=_IMAGE(
        height=height, width=width, colorspace=channels, encoded_image_string=data))
