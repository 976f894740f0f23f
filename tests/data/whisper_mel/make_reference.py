#!/usr/bin/python3
"""Reference Whisper log-mel frames for tests/kernels/log_mel_test.cpp, from numpy alone.

Independent of the C++ code: the mel scale and filterbank follow librosa.filters.mel
(Slaney scale, Slaney area norm), the STFT torch.stft(center=True, pad_mode="reflect",
window=hann_window(400)) with the last frame dropped, the scaling openai/whisper
audio.log_mel_spectrogram (30 s of zero padding, log10 clamp at max - 8, (x + 4) / 4).

Command (from the repository root):
    /usr/bin/python3 tests/data/whisper_mel/make_reference.py > tests/data/whisper_mel/reference.txt
Output: for n_mel in (80, 128): a line "n_mel N frames F", then F lines of N values (the
first F frames, frame-major), then a line "pad V": the value of every frame after the clip.
"""
import numpy as np

SR, NFFT, HOP = 16000, 400, 160
N_SAMPLES = 4000  # 0.25 s
FRAMES = 32       # 25 frames of the clip and its edge, then padding


def signal():
    # Same formula as log_mel_test.cpp: two tones plus an integer-hash noise, in float64,
    # then rounded to float32.
    i = np.arange(N_SAMPLES, dtype=np.float64)
    noise = ((i * 7919) % 1000) / 1000.0 - 0.5
    x = (0.5 * np.sin(2 * np.pi * 440.0 * i / SR)
         + 0.25 * np.sin(2 * np.pi * 3000.0 * i / SR + 0.3) + 0.1 * noise)
    return x.astype(np.float32).astype(np.float64)


def hz_to_mel(f):
    f = np.asarray(f, dtype=np.float64)
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-30) / min_log_hz) / logstep,
                    f / f_sp)


def mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)


def filterbank(n_mel):
    fft_freqs = np.linspace(0, SR / 2, 1 + NFFT // 2)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(SR / 2), n_mel + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    w = np.maximum(0, np.minimum(lower, upper))
    w *= (2.0 / (mel_f[2:n_mel + 2] - mel_f[:n_mel]))[:, None]
    return w.astype(np.float32).astype(np.float64)


def log_mel(x, n_mel):
    x = np.concatenate([x, np.zeros(30 * SR)])
    x = np.pad(x, NFFT // 2, mode="reflect")
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(NFFT) / NFFT)  # periodic Hann
    n_frames = 1 + (len(x) - NFFT) // HOP
    idx = np.arange(NFFT)[None, :] + HOP * np.arange(n_frames)[:, None]
    spec = np.fft.rfft(x[idx] * window, axis=1)
    power = (np.abs(spec) ** 2)[:-1]          # [frames, 201], last frame dropped
    mel = power @ filterbank(n_mel).T          # [frames, n_mel]
    log_spec = np.log10(np.maximum(mel, 1e-10))
    log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
    return (log_spec + 4.0) / 4.0


def main():
    x = signal()
    for n_mel in (80, 128):
        m = log_mel(x, n_mel)
        assert m.shape[0] == (N_SAMPLES + 30 * SR) // HOP
        print(f"n_mel {n_mel} frames {FRAMES}")
        for f in range(FRAMES):
            print(" ".join(f"{v:.7g}" for v in m[f]))
        assert np.all(m[FRAMES:] == m[-1])
        print(f"pad {m[-1][0]:.7g}")


if __name__ == "__main__":
    main()
