"""REST endpoints of user-attributed data: thin views over userdata_app.services and selectors."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from agentstate.api import people
from agentstate.api.pagination import KeyPagination
from agentstate.api.serializers import validated
from agentstate.api.views import TenantAPIView, TenantRequest
from userdata_app import selectors, services
from userdata_app.api.serializers import UserDatumInput, UserDatumSerializer


class UserDataListView(TenantAPIView):
    reads = ("user_data",)
    person_named_in = (people.PATH,)
    pagination_class = KeyPagination

    @extend_schema(
        summary="List a user's keys and values, in key order", responses={200: UserDatumSerializer(many=True)}
    )
    def get(self, request: TenantRequest, user_id: str) -> Response:
        return self.paginated(
            selectors.user_datum_list(tenant=request.tenant, user_id=user_id),
            serializer_class=UserDatumSerializer,
        )


class UserDatumView(TenantAPIView):
    reads = ("user_data",)
    person_named_in = (people.PATH,)

    @extend_schema(summary="Get one key of a user", responses={200: UserDatumSerializer})
    def get(self, request: TenantRequest, user_id: str, key: str) -> Response:
        return Response(
            UserDatumSerializer(selectors.user_datum_get(tenant=request.tenant, user_id=user_id, key=key)).data
        )

    @extend_schema(summary="Set one key of a user", request=UserDatumInput, responses={200: UserDatumSerializer})
    def put(self, request: TenantRequest, user_id: str, key: str) -> Response:
        value = validated(UserDatumInput, request.data)["value"]
        datum = services.user_datum_set(tenant=request.tenant, user_id=user_id, key=key, value=value)
        return Response(UserDatumSerializer(datum).data)

    @extend_schema(summary="Delete one key of a user", responses={204: None})
    def delete(self, request: TenantRequest, user_id: str, key: str) -> Response:
        services.user_datum_delete(tenant=request.tenant, user_id=user_id, key=key)
        return Response(status=status.HTTP_204_NO_CONTENT)
