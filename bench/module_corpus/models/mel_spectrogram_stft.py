import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def hz_to_mel(f):
    return 2595.0 * math.log10(1.0 + f / 700.0)


def mel_to_hz(m):
    return 700.0 * (10 ** (m / 2595.0) - 1.0)


def mel_filterbank(sr, n_fft, n_mels, fmin=0.0, fmax=None):
    fmax = fmax or sr / 2
    mels = torch.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2)
    hz = 700.0 * (10 ** (mels / 2595.0) - 1.0)
    bins = torch.linspace(0, sr / 2, n_fft // 2 + 1)
    fb = torch.zeros(n_mels, n_fft // 2 + 1)
    for i in range(n_mels):
        lo, c, hi = hz[i], hz[i + 1], hz[i + 2]
        up = (bins - lo) / (c - lo)
        down = (hi - bins) / (hi - c)
        fb[i] = torch.clamp(torch.minimum(up, down), min=0.0)
    return fb


class MelSpectrogram(nn.Module):
    """Log-mel front end as in many TTS/ASR repos (HiFi-GAN style mel_spectrogram)."""

    def __init__(self, sample_rate=8000, n_fft=64, hop_length=16, win_length=64, n_mels=20, center=True):
        super().__init__()
        self.n_fft, self.hop_length, self.win_length, self.center = n_fft, hop_length, win_length, center
        self.register_buffer("window", torch.hann_window(win_length), persistent=False)
        self.register_buffer("mel_basis", mel_filterbank(sample_rate, n_fft, n_mels))

    def forward(self, wav):
        if wav.dim() == 3:
            wav = wav.squeeze(1)
        pad = (self.n_fft - self.hop_length) // 2
        wav = F.pad(wav.unsqueeze(1), (pad, pad), mode="reflect").squeeze(1)
        spec = torch.stft(wav, self.n_fft, hop_length=self.hop_length, win_length=self.win_length,
                          window=self.window, center=False, pad_mode="reflect", normalized=False,
                          onesided=True, return_complex=True)
        mag = torch.sqrt(spec.real.pow(2) + spec.imag.pow(2) + 1e-9)
        mel = torch.matmul(self.mel_basis, mag)
        return torch.log(torch.clamp(mel, min=1e-5))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.mel = MelSpectrogram()
        self.power = MelSpectrogram(n_mels=16)
        self.proj = nn.Conv1d(20, 8, 3, padding=1)

    def forward(self, wav):
        logmel = self.mel(wav)
        spec = torch.stft(wav.squeeze(1), 32, hop_length=8, window=torch.hann_window(32, device=wav.device),
                          return_complex=True)
        power = spec.abs() ** 2
        db = 10.0 * torch.log10(torch.clamp(power, min=1e-10))
        db = torch.max(db, db.amax(dim=(-2, -1), keepdim=True) - 80.0)
        return self.proj(logmel), db, self.power(wav).mean(-1)


def make_inputs():
    return (torch.randn(2, 1, 400),)
