// Package bert is the BERT encoder as Hugging Face's transformers defines
// it (BertModel, modeling_bert.py), with its parameter names and shapes:
// word, absolute position and token type embeddings, post-norm layers,
// GELU; and sentence-transformers' mean pooling with L2 normalisation
// (Embed), as all-MiniLM-L6-v2 computes its sentence embeddings.
package bert
