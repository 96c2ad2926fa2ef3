"""AWS Bedrock Runtime: Converse, InvokeModel and its model families, event streams."""
