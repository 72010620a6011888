"""The batches the Trainer feeds the model: `DataCollatorForSeq2Seq`, checked on the host."""

from __future__ import annotations

from transformers import DataCollatorForSeq2Seq


class CheckedDataCollator(DataCollatorForSeq2Seq):
    """`DataCollatorForSeq2Seq` that runs the model's input checks (`model.check_inputs`) on every batch it builds,
    on the host, before the batch reaches the device. A compiled or CUDA-graph-captured `forward` skips its own checks
    (they would need host reads inside the graph), so this is where a bad batch still gets a clear error. With
    ``pad_to_multiple_of`` the batches come in a few shapes (buckets), so a compiled or captured step is made once per
    bucket, not once per batch."""

    def __call__(self, features, return_tensors=None):
        batch = super().__call__(features, return_tensors)
        if self.model is not None and hasattr(self.model, "check_inputs"):
            self.model.check_inputs(batch["input_ids"], batch.get("attention_mask"), labels=batch.get("labels"),
                                    decoder_input_ids=batch.get("decoder_input_ids"))
        return batch
