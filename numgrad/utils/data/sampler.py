"""``numgrad.utils.data.sampler``: the index samplers. Shuffling draws from numgrad's
generator exactly as PyTorch's RandomSampler draws from its own, so the same seed gives the
same order."""

import numpy as np

from numgrad.random import Generator, default_generator


class Sampler:
    def __init__(self, data_source=None):
        pass


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation per pass; without a generator, a fresh one is seeded from the
    default generator with one int64 draw (as PyTorch does)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.generator is None:
            raw = default_generator.raw(2).astype(np.uint64)
            seed = int(((raw[0] << np.uint64(32)) | raw[1]) % np.uint64(1 << 63))
            generator = Generator().manual_seed(seed)
        else:
            generator = self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from generator.randint(0, n, (32,), np.int64).tolist()
            yield from generator.randint(0, n, (self.num_samples % 32,), np.int64).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from generator.randperm(n).tolist()
        yield from generator.randperm(n).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (one randperm per pass, as PyTorch draws it)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        from numgrad._factories import randperm

        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices into ``weights`` drawn by ``multinomial`` (PyTorch's draws)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        import numgrad

        weights = numgrad.as_tensor(weights, dtype=numgrad.double)
        if weights.dim() != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights.shape)}")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        import numgrad

        drawn = numgrad.multinomial(self.weights, self.num_samples, self.replacement,
                                    generator=self.generator)
        yield from iter(drawn.tolist())

    def __len__(self):
        return self.num_samples
