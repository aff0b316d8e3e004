"""TensorBoard event payloads of encoded media: audio as the legacy ``Summary.Audio``
value the peers write (TensorBoard's loader turns it into the audio plugin's blob
sequence of [WAV, label], keeping the sample rate in the event for other readers), and
an already encoded image (PNG or GIF) in the images plugin's blob sequence form."""

from __future__ import annotations

from ..pb import message_class
from .tensorboard import TensorBoardEncoder, value_event

__all__ = ["audio_payload", "encoded_image_payload"]

_ENCODER = TensorBoardEncoder()  # stateless: only its payload builders are used
# by name: the pure-Python protobuf runtime does not attach nested classes to their parents
_AUDIO = message_class("summarylog.tb.Summary.Audio")


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
