"""The project's language layer: pure text functions with one definition each (issue 14).

``sentences``: what a sentence is, for the generator and the validator.
``references``: section references in questions ("section 420 IPC"), for retrieval and
sufficiency, and the canonical section number the corpus loader uses.
``windows``: how a text longer than a cross-encoder's input is covered, never truncated.
``text``, ``quantities``, ``negation``: tokens and stems, numbers and dates, negation cues and
their scopes; the validator checks answers with them, synthesis finds disagreeing passages.
``names``: how a text names a document by its title (a bridge between documents), for
synthesis's evidence and the extractive generator.
``footnotes``: the footnote digits the statute files glue to words ("trafficking1"), removed by
the statutes reader and the evaluation's IPC reader.
``text.stem`` is the one stemmer: BM25's tokens, sufficiency's key terms and the validator's
content terms.
"""
