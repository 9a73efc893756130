"""Models of the book, from the RNN baselines of Part I to the GPT of Part III."""
from .embeddings import ItemPayloadEmbedding, PairEmbedding  # noqa: F401  (chapters 1-6)
from .recall import RecallAttention, RecallLSTM, RecallTransformer  # noqa: F401  (ch. 1, 2, 7, 8)
from .rnn import *  # noqa: F401,F403  (chapter 3: a loop RNN for timing)
from .mixers import *  # noqa: F401,F403  (chapters 4-6)
from .heads import *  # noqa: F401,F403  (chapter 6)
from .transformer import *  # noqa: F401,F403  (chapter 8)
from .memory import *  # noqa: F401,F403  (chapter 9)
