"""disguise: mask what LLM providers must not see, restore it on the way back."""
