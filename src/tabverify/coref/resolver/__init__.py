"""Hebrew coreference resolution from raw text: morphological segmentation, mentions and links."""
