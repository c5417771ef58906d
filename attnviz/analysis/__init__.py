"""Tensors in, numbers out: head statistics, rollout, walkthroughs, positions, windows,
receptive fields, convolution as attention, image attention, the lesson's corpus and taggers.
No Streamlit here: everything is usable from a notebook and tested without a browser."""
